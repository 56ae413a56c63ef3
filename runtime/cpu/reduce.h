// runtime/cpu/reduce.h — sums over one block of dims (twin: cuda/reduce.h).
//
// Any reduction of adjacent dims of a packed tensor is a reduction over the middle dim of an
// (outer, reduce, inner) view: sum over dim 1 of (32, 128, 768) is outer 32, reduce 128,
// inner 768. Results are deterministic: each output is summed in a fixed order (in double),
// whatever the number of threads.
#pragma once
#include <cstdint>

namespace mase::cpu {

// out[o, i] = Σ_r inp[o, r, i]; inp packed (outer, reduce, inner), out packed (outer, inner).
template <class T>
void sum_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner);

}  // namespace mase::cpu
