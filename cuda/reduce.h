// cuda/reduce.h — twin of runtime/cpu/reduce.h (f32 only): the (outer, reduce, inner) sum
// and max.
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, sum_forward, (float* out, const float* inp, int64_t outer, int64_t reduce,
                                 int64_t inner))
MASE_CUDA_FN(void, max_forward, (float* out, const float* inp, int64_t outer, int64_t reduce,
                                 int64_t inner))
MASE_CUDA_FN(void, max_backward, (float* dinp, const float* dout, const float* inp,
                                  const float* out, int64_t outer, int64_t reduce,
                                  int64_t inner))

}  // namespace mase::cuda
