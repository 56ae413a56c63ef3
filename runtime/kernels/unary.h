// runtime/kernels/unary.h — elementwise y = f(x) and its backward.
//
// The contract of the unary kernels: both backends' signatures side by side, implemented by
// runtime/cpu/unary.cpp (mase::cpu, templates over float and double) and cuda/unary.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase {
enum class UnaryOp : uint8_t { neg, exp, log, sqrt, tanh, relu };
}

namespace mase::cpu {

// out[i] = f(inp[i]) over n packed elements.
template <class T>
void unary_forward(UnaryOp op, T* out, const T* inp, int64_t n);

// dinp[i] = dout[i] · f'(inp[i]), written with whichever of inp / out is cheaper:
// exp: dout·out, log: dout/inp, sqrt: dout/(2·out), tanh: dout·(1-out²), relu: dout·[inp>0].
template <class T>
void unary_backward(UnaryOp op, T* dinp, const T* dout, const T* inp, const T* out, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/unary.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, unary_forward, (UnaryOp op, float* out, const float* inp, int64_t n))
MASE_CUDA_FN(void, unary_backward, (UnaryOp op, float* dinp, const float* dout, const float* inp,
                                    const float* out, int64_t n))

}  // namespace mase::cuda
