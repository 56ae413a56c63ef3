// cuda/mxint8.h — twin of quant/kernels/mxint8.h: MXINT8 quantize / dequantize on the GPU.
// Same layout and results as the CPU kernels (int8 elements (rows, K), E8M0 scales
// (rows, ceil(K/32))); pointers are device pointers. The tiling is explained in mxint8.cu.
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, mxint8_quantize, (int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K))
// bf16_trick: rebuild each value as a bf16 (see quant/kernels/mxint8.h) instead of multiplying
MASE_CUDA_FN(void, mxint8_dequantize, (float* out, const int8_t* q, const uint8_t* scales, int64_t rows,
                                       int64_t K, bool bf16_trick))

}  // namespace mase::cuda
