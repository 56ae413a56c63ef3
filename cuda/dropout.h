// cuda/dropout.h — twin of runtime/cpu/dropout.h (f32 only); same Philox words, same mask.
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, dropout_forward, (float* out, const float* inp, int64_t n, uint64_t seed,
                                     uint64_t offset, uint32_t threshold, float scale))

}  // namespace mase::cuda
