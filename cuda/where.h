// cuda/where.h — twin of runtime/cpu/where.h (f32 only).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"
#include "runtime/shape.h"

namespace mase::cuda {

MASE_CUDA_FN(void, where_forward, (float* out, const uint8_t* cond, const Strides& cond_strides,
                                   const float* a, const Strides& a_strides, const float* b,
                                   const Strides& b_strides, const Shape& shape))

}  // namespace mase::cuda
