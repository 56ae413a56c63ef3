// runtime/kernels/mxint8_linear.h — a Linear whose weight stays packed in MXINT8 on the GPU:
// y = x·dequant(W)ᵀ + b with the dequantization done inside the GEMM's tile loads
// (cuda/mxint8_linear.cu; the op is quant::mxint8_linear in quant/mxint8.h).
//
//   x  (M, K) f32 row-major       the activations, M = every leading dim
//   wq (N, K) int8                the weight's MXINT8 elements (quant/mxint8.h layout)
//   ws (N, ceil(K/32)) uint8      one E8M0 scale per block of 32 along K
//   b  (N) f32 or null
//   y  (M, N) f32
// Each weight element becomes 2^(s−133)·q exactly as mxint8_dequantize makes it (the same
// quant::mx_decode_mul), so y equals linear(x, mxint8_unpack(W), b) up to the order of the
// K-sum (a different GEMM: within rounding, not bit for bit).
//
// Why: the weight is read from memory as 8.25 bits per element instead of 32 and no fp32 copy
// of it is ever made — no (N, K) f32 temporary, so the memory a packed model saves is not
// spent again at every forward (what the CPU's dequantize-then-sgemm path does).
// No CPU twin: the CPU dequantizes into a temporary and calls sgemm (quant/mxint8_linear.cpp).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cuda {

// kernel: 0 picks (the 128 × 128 kernel where K % 32 == 0 and the pointers are 16-byte
// aligned, else the simple one); 1 forces the simple 64 × 64 kernel, 2 the 128 × 128 one
// (ShapeError where it does not apply) — for the benchmark's ladder and the tests.
MASE_CUDA_FN(void, mxint8_linear_forward, (float* y, const float* x, const int8_t* wq,
                                           const uint8_t* ws, const float* bias, int64_t M,
                                           int64_t N, int64_t K, int kernel))

// MXINT8 × MXINT8 on the int8 tensor cores (cuda/mxint8_mma.cu; a benchmark kernel, Lab 4.3a):
// y (M, N) = Σ_blocks 2^(sx−133)·2^(sw−133)·Σ_k qx·qw, x packed as xq (M, K) + xs (M, K/32), W as
// wq (N, K) + ws (N, K/32). K a multiple of 32, 16-byte aligned operands, finite scales.
MASE_CUDA_FN(void, mxint8_mma_forward, (float* y, const int8_t* xq, const uint8_t* xs,
                                        const int8_t* wq, const uint8_t* ws, int64_t M, int64_t N,
                                        int64_t K))

}  // namespace mase::cuda
