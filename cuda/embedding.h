// cuda/embedding.h — twin of runtime/cpu/embedding.h (f32 only).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, embedding_forward, (float* out, const int32_t* ids, const float* weight,
                                       int64_t N, int64_t C))
MASE_CUDA_FN(void, embedding_backward, (float* dweight, const float* dout, const int32_t* ids,
                                        int64_t N, int64_t C))

}  // namespace mase::cuda
