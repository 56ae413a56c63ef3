// cuda/layer_norm.h — twin of runtime/cpu/layer_norm.h (f32 only).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"
#include "runtime/cpu/dropout.h"  // DropoutMask

namespace mase::cuda {

MASE_CUDA_FN(void, layer_norm_forward, (float* out, float* mean, float* rstd, const float* inp,
                                        const float* weight, const float* bias, int64_t rows,
                                        int64_t cols, double eps))
MASE_CUDA_FN(void, layer_norm_backward, (float* dinp, float* dweight, float* dbias,
                                         const float* dout, const float* inp, const float* weight,
                                         const float* mean, const float* rstd, int64_t rows,
                                         int64_t cols))

MASE_CUDA_FN(void, dropout_add_layer_norm_forward,
             (float* out, float* hidden, uint8_t* keep, float* mean, float* rstd,
              const float* inp, const float* inp_bias, const float* residual,
              const float* weight, const float* bias, int64_t rows, int64_t cols, double eps,
              const DropoutMask& mask))
MASE_CUDA_FN(void, dropout_add_layer_norm_backward,
             (float* dinp, float* dresidual, float* dinp_bias, float* dweight, float* dbias,
              const float* dout, const float* hidden, const uint8_t* keep, double scale,
              const float* weight, const float* mean, const float* rstd, int64_t rows,
              int64_t cols))

}  // namespace mase::cuda
