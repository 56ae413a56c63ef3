// cuda/adamw.h — twin of runtime/cpu/adamw.h (f32 only): the fused AdamW update on the GPU.
#pragma once
#include "cuda/cuda.h"
#include "runtime/cpu/adamw.h"  // AdamWScalars

namespace mase::cuda {

MASE_CUDA_FN(void, adamw_step, (float* param, float* exp_avg, float* exp_avg_sq,
                                const float* grad, const AdamWScalars& s, int64_t n))

}  // namespace mase::cuda
