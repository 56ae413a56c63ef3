// cuda/unary.h — twin of runtime/cpu/unary.h (f32 only).
#pragma once
#include "cuda/cuda.h"
#include "runtime/cpu/unary.h"  // UnaryOp

namespace mase::cuda {

MASE_CUDA_FN(void, unary_forward, (UnaryOp op, float* out, const float* inp, int64_t n))
MASE_CUDA_FN(void, unary_backward, (UnaryOp op, float* dinp, const float* dout, const float* inp,
                                    const float* out, int64_t n))

}  // namespace mase::cuda
