// runtime/cpu/grad_norm.h — Σ x² of a tensor in double, deterministically (twin:
// cuda/grad_norm.h). The kernel of train::clip_grad_norm: the total gradient norm is
// √(Σ over every gradient of Σ g²).
#pragma once
#include <cstdint>

namespace mase::cpu {

// Σ x[i]² over n packed elements, accumulated in double. The elements are summed in fixed
// chunks of kGrainElems whose partial sums are added in chunk order, so the result is the same
// bit for bit on 1 thread or 64.
template <class T>
double sum_squares(const T* x, int64_t n);

}  // namespace mase::cpu
