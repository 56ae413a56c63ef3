// runtime/kernels/grad_norm.h — Σ x² of a tensor in double, deterministically. The kernel of train::clip_grad_norm: the total gradient norm is
// √(Σ over every gradient of Σ g²).
//
// The contract of the grad_norm kernels: both backends' signatures side by side, implemented by
// runtime/cpu/grad_norm.cpp (mase::cpu, templates over float and double) and cuda/grad_norm.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// Σ x[i]² over n packed elements, accumulated in double. The elements are summed in fixed
// chunks of kGrainElems whose partial sums are added in chunk order, so the result is the same
// bit for bit on 1 thread or 64.
template <class T>
double sum_squares(const T* x, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/grad_norm.cu ----
namespace mase::cuda {

constexpr int kSumSquaresBlocks = 128;

// partials[b] = Σ x[i]² over the elements block b visits (i ≡ b·256 + lane mod grid size).
MASE_CUDA_FN(void, sum_squares_partials, (double* partials, const float* x, int64_t n))

}  // namespace mase::cuda
