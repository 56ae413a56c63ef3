// runtime/kernels/gelu.h — exact (erf) GELU and its derivative, elementwise, and the fused
// bias + GELU of BERT's intermediate layer.
//
// The contract of the gelu kernels: both backends' signatures side by side, implemented by
// runtime/cpu/gelu.cpp (mase::cpu, templates over float and double) and cuda/gelu.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// out = inp · Φ(inp), Φ the standard normal CDF, over n packed elements.
template <class T>
void gelu_forward(T* out, const T* inp, int64_t n);
// dinp = dout · (Φ(inp) + inp · φ(inp)), φ the standard normal density.
template <class T>
void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n);

// inp, out, dout, dinp are packed (rows, cols); bias and dbias are (cols).
// out = gelu(inp + bias), the bias broadcast over rows.
template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int64_t rows, int64_t cols);
// dinp = dout · gelu'(inp + bias),  dbias = Σ_rows dinp (overwritten, not accumulated into).
// dinp may be dout (in place: each element is read before it is overwritten, and dbias sums
// what was written); no other overlap is allowed. The CUDA twin allows the same.
template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* dout, const T* inp, const T* bias,
                        int64_t rows, int64_t cols);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/gelu.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, gelu_forward, (float* out, const float* inp, int64_t n))
MASE_CUDA_FN(void, gelu_backward, (float* dinp, const float* dout, const float* inp, int64_t n))
MASE_CUDA_FN(void, bias_gelu_forward, (float* out, const float* inp, const float* bias,
                                       int64_t rows, int64_t cols))
MASE_CUDA_FN(void, bias_gelu_backward, (float* dinp, float* dbias, const float* dout,
                                        const float* inp, const float* bias, int64_t rows,
                                        int64_t cols))

}  // namespace mase::cuda
