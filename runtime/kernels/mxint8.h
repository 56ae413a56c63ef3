// runtime/kernels/mxint8.h — MXINT8 packing kernels: runtime/cpu/mxint8.cpp and cuda/mxint8.cu.
//
// Layout of a (rows, K) tensor (blocks of 32 along K, OCP MX v1.0):
//   q      (rows, K)            int8 elements, row-major        — K bytes per row
//   scales (rows, ceil(K/32))   uint8 E8M0 exponents, row-major — one byte per block
// The last block of a row is shorter when K % 32 != 0. The two arrays are separate so each is
// contiguous: dequantization streams both with no stride tricks.
//
// Quantize, per block: s = clamp(floor(log2 amax), −127, 127) + 127 (all zeros: 0; NaN or inf
// in the block: 0xFF), q = clamp(RNE(x·64/2^(s−127)), −127, 127). A neat fact the kernel uses:
// for a finite amax, s is exactly the biased exponent field of amax as an f32 (bits 23..30);
// a subnormal or zero amax has field 0, which is the clamped value; NaN and inf have 0xFF.
//
// Dequantize: value = 2^(s−127)·q/64, two ways that must agree bit for bit:
//   multiply  float(q) · 2^(s−133)
//   bf16      q has 1 integer bit (bit 6) and 6 fraction bits, like a bf16 mantissa with its
//             implicit one: build the bf16 sign | s << 7 | (|q| & 63) << 1 (= 2^(s−127)·(1 +
//             (|q|&63)/64)) and, when bit 6 of |q| is clear, subtract the implicit one
//             2^(s−127). Needs a normal bf16 exponent: blocks with s = 0 (subnormal) or
//             s = 0xFF (NaN) take the multiply path.
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

constexpr int64_t kMxBlock = 32;
constexpr int64_t mx_blocks(int64_t K) { return (K + kMxBlock - 1) / kMxBlock; }

void mxint8_quantize(int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K);
void mxint8_dequantize(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K);
void mxint8_dequantize_bf16(float* out, const int8_t* q, const uint8_t* scales, int64_t rows,
                            int64_t K);
// Fake quantization: out = dequantize(quantize(x)), one block at a time through a 32-byte
// buffer (no packed tensor in memory). Same values as block_forward's mxint8, faster.
void mxint8_fake_quantize(float* out, const float* x, int64_t rows, int64_t K);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/mxint8.cu ----
// Same layout and results as the CPU kernels; pointers are device pointers. The tiling is
// explained in mxint8.cu.
namespace mase::cuda {

MASE_CUDA_FN(void, mxint8_quantize, (int8_t* q, uint8_t* scales, const float* x, int64_t rows,
                                     int64_t K))
// bf16_trick: rebuild each value as a bf16 (see above) instead of multiplying
MASE_CUDA_FN(void, mxint8_dequantize, (float* out, const int8_t* q, const uint8_t* scales,
                                       int64_t rows, int64_t K, bool bf16_trick))
// Fake quantization, out = dequantize(quantize(x)) in one pass (no packed tensor in memory).
MASE_CUDA_FN(void, mxint8_fake_quantize, (float* out, const float* x, int64_t rows, int64_t K))

}  // namespace mase::cuda
