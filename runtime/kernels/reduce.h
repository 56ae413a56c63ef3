// runtime/kernels/reduce.h — sums and maxima over one block of dims.
//
// Any reduction of adjacent dims of a packed tensor is a reduction over the middle dim of an
// (outer, reduce, inner) view: sum over dim 1 of (32, 128, 768) is outer 32, reduce 128,
// inner 768. Results are deterministic: each output is summed in a fixed order (in double),
// whatever the number of threads.
//
// The contract of the reduce kernels: both backends' signatures side by side, implemented by
// runtime/cpu/reduce.cpp (mase::cpu, templates over float and double) and cuda/reduce.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// out[o, i] = Σ_r inp[o, r, i]; inp packed (outer, reduce, inner), out packed (outer, inner).
template <class T>
void sum_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner);

// out[o, i] = max_r inp[o, r, i]; −inf when reduce = 0 (amax refuses that before calling).
// NaN entries are skipped, as by std::max and fmax (torch.amax would return NaN): a run of
// only NaN gives −inf.
template <class T>
void max_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner);

// dinp[o, r, i] = dout[o, i] / k where inp[o, r, i] == out[o, i] (k = how many tie), else 0:
// the gradient of a max is shared evenly among the elements that reach it (torch.amax).
template <class T>
void max_backward(T* dinp, const T* dout, const T* inp, const T* out, int64_t outer,
                  int64_t reduce, int64_t inner);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/reduce.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, sum_forward, (float* out, const float* inp, int64_t outer, int64_t reduce,
                                 int64_t inner))
MASE_CUDA_FN(void, max_forward, (float* out, const float* inp, int64_t outer, int64_t reduce,
                                 int64_t inner))
MASE_CUDA_FN(void, max_backward, (float* dinp, const float* dout, const float* inp,
                                  const float* out, int64_t outer, int64_t reduce,
                                  int64_t inner))

}  // namespace mase::cuda
