// cuda/softmax.h — twin of runtime/cpu/softmax.h (f32 only).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, softmax_backward, (float* dinp, const float* dout, const float* out,
                                      int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_backward, (float* dinp, const float* dout, const float* out,
                                          int64_t rows, int64_t cols))

}  // namespace mase::cuda
