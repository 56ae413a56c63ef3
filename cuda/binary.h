// cuda/binary.h — twin of runtime/cpu/binary.h (f32 only).
#pragma once
#include "cuda/cuda.h"
#include "runtime/cpu/binary.h"  // BinaryOp

namespace mase::cuda {

MASE_CUDA_FN(void, binary_forward, (BinaryOp op, float* out, const float* a,
                                    const Strides& a_strides, const float* b,
                                    const Strides& b_strides, const Shape& shape))
MASE_CUDA_FN(void, binary_scalar_forward, (BinaryOp op, float* out, const float* a, float s,
                                           bool scalar_first, int64_t n))

}  // namespace mase::cuda
