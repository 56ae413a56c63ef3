// cuda/cross_entropy.h — twin of runtime/cpu/cross_entropy.h (f32 logits, i32 targets).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, cross_entropy_forward, (float* loss, float* losses, float* lse,
                                           const float* logits, const int32_t* targets, int64_t N,
                                           int64_t C, int64_t ignore_index, int64_t count))
MASE_CUDA_FN(void, cross_entropy_backward, (float* dlogits, const float* dloss,
                                            const float* logits, const float* lse,
                                            const int32_t* targets, int64_t N, int64_t C,
                                            int64_t ignore_index, int64_t count))

}  // namespace mase::cuda
