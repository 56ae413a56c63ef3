// cuda/gelu.h — twin of runtime/cpu/gelu.h (f32 only).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, gelu_forward, (float* out, const float* inp, int64_t n))
MASE_CUDA_FN(void, gelu_backward, (float* dinp, const float* dout, const float* inp, int64_t n))
MASE_CUDA_FN(void, bias_gelu_forward, (float* out, const float* inp, const float* bias,
                                       int64_t rows, int64_t cols))
MASE_CUDA_FN(void, bias_gelu_backward, (float* dinp, float* dbias, const float* dout,
                                        const float* inp, const float* bias, int64_t rows,
                                        int64_t cols))

}  // namespace mase::cuda
