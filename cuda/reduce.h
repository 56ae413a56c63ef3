// cuda/reduce.h — twin of runtime/cpu/reduce.h (f32 only): the (outer, reduce, inner) sum.
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, sum_forward, (float* out, const float* inp, int64_t outer, int64_t reduce,
                                 int64_t inner))

}  // namespace mase::cuda
