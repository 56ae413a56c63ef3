// runtime/cpu/reduce.h — sums and maxima over one block of dims (twin: cuda/reduce.h).
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

// out[o, i] = max_r inp[o, r, i]; −inf when reduce = 0. NaN entries are skipped, as by
// std::max and fmax (torch.amax would return NaN): a run of only NaN gives −inf.
template <class T>
void max_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner);

// dinp[o, r, i] = dout[o, i] / k where inp[o, r, i] == out[o, i] (k = how many tie), else 0:
// the gradient of a max is shared evenly among the elements that reach it (torch.amax).
template <class T>
void max_backward(T* dinp, const T* dout, const T* inp, const T* out, int64_t outer,
                  int64_t reduce, int64_t inner);

}  // namespace mase::cpu
