// runtime/kernels/softmax.h — softmax and log_softmax over the last dim.
//
// Every tensor here is packed (rows, cols): the op (autograd/ops/softmax.cpp) flattens all
// leading dims into rows. A row whose entries are all -inf (a fully masked attention row)
// gives softmax 0s and log_softmax -infs, never NaN; see the op for why.
//
// The contract of the softmax kernels: both backends' signatures side by side, implemented by
// runtime/cpu/softmax.cpp (mase::cpu, templates over float and double) and cuda/softmax.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// out = exp(inp - max) / Σ exp(inp - max), row by row.
template <class T>
void softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols);
// dinp = out · (dout - Σ dout·out), row by row.
template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols);

// out = inp - max - log Σ exp(inp - max), row by row.
template <class T>
void log_softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols);
// dinp = dout - exp(out) · Σ dout, row by row.
template <class T>
void log_softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/softmax.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, softmax_backward, (float* dinp, const float* dout, const float* out,
                                      int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_backward, (float* dinp, const float* dout, const float* out,
                                          int64_t rows, int64_t cols))

}  // namespace mase::cuda
