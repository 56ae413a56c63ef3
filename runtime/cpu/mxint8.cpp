// runtime/cpu/mxint8.cpp — MXINT8 quantize / dequantize on the CPU (see mxint8.h).
// Parallel over rows; the inner loops over one block of 32 are branch-free so they vectorise.
// The element arithmetic is quant_elem.h's mx_* functions, which cuda/mxint8.cu runs too.
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/quant_elem.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

int64_t grain_rows(int64_t K) { return std::max<int64_t>(1, kGrainElems / std::max<int64_t>(K, 1)); }

void quantize_block(int8_t* q, uint8_t* scale, const float* x, int64_t n) {
  uint32_t amax = 0;  // |x| as bits: non-negative floats order like their bit patterns
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
  const uint32_t s = quant::mx_scale(amax);  // NaN and inf: 0xFF
  *scale = static_cast<uint8_t>(s);
  if (s == 0xFF) {
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return;
  }
  // the two factors are built from bits (quant::mx_pow2): std::ldexp, called twice per block
  // of 32, was most of quantize_block's time (pack at 0.27 of memcpy)
  const quant::MxFactors f = quant::mx_factors(s);
  for (int64_t i = 0; i < n; ++i) q[i] = quant::mx_quantize_one(x[i], f);
}

// out = float(q)·2^(s−133) for one block
void dequantize_block_mul(float* out, const int8_t* q, uint8_t s, int64_t n) {
  const float step = quant::mx_step(s);  // 2^(s−127)/64; NaN for s = 0xFF
  for (int64_t i = 0; i < n; ++i) out[i] = quant::mx_decode_mul(q[i], step);
}

void dequantize_block_bf16(float* out, const int8_t* q, uint8_t s, int64_t n) {
  if (s == 0 || s == 0xFF) return dequantize_block_mul(out, q, s, n);
  for (int64_t i = 0; i < n; ++i) out[i] = quant::mx_decode_bf16(q[i], s);
}

template <class Fn>
void dequantize_rows(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K, Fn block) {
  const int64_t nb = mx_blocks(K);
  parallel_for(0, rows, grain_rows(K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t j = b * kMxBlock, n = std::min(kMxBlock, K - j);
        block(out + r * K + j, q + r * K + j, scales[r * nb + b], n);
      }
  });
}

}  // namespace

void mxint8_quantize(int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K) {
  const int64_t nb = mx_blocks(K);
  parallel_for(0, rows, grain_rows(K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t j = b * kMxBlock, n = std::min(kMxBlock, K - j);
        quantize_block(q + r * K + j, scales + r * nb + b, x + r * K + j, n);
      }
  });
}

void mxint8_dequantize(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K) {
  dequantize_rows(out, q, scales, rows, K, dequantize_block_mul);
}

void mxint8_dequantize_bf16(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K) {
  dequantize_rows(out, q, scales, rows, K, dequantize_block_bf16);
}

void mxint8_fake_quantize(float* out, const float* x, int64_t rows, int64_t K) {
  parallel_for(0, rows, grain_rows(K), [&](int64_t r0, int64_t r1) {
    int8_t q[kMxBlock];
    uint8_t s;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < K; j += kMxBlock) {
        const int64_t n = std::min(kMxBlock, K - j);
        quantize_block(q, &s, x + r * K + j, n);
        dequantize_block_mul(out + r * K + j, q, s, n);
      }
  });
}

}  // namespace mase::cpu
