// runtime/cpu/mxint8.cpp — MXINT8 quantize / dequantize on the CPU (see mxint8.h).
// Parallel over rows; the inner loops over one block of 32 are branch-free so they vectorise.
#include "runtime/kernels/mxint8.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

int64_t grain_rows(int64_t K) { return std::max<int64_t>(1, kGrainElems / std::max<int64_t>(K, 1)); }

// 2^e for a normal exponent (−126 ≤ e ≤ 127), built from its bits: the exponent field is e + 127
// and the mantissa 0. Exact, like std::ldexp(1.0f, e), without the libm call — which, made
// twice per block of 32, was most of quantize_block's time (pack at 0.27 of memcpy).
float pow2(int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); }

void quantize_block(int8_t* q, uint8_t* scale, const float* x, int64_t n) {
  uint32_t amax = 0;  // |x| as bits: non-negative floats order like their bit patterns
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu);
  const uint32_t s = std::min<uint32_t>(amax >> 23, 0xFF);  // NaN and inf: 0xFF
  *scale = static_cast<uint8_t>(s);
  if (s == 0xFF) {
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return;
  }
  // x·64/2^(s−127) = x·2^(133−s); for s < 6 that power overflows f32, so split it in two
  // (both multiplies are exact: x·2^(133−s) < 128 by the choice of s).
  const int h = s < 6 ? 6 : 0;
  const float f1 = pow2(133 - int(s) - h), f2 = pow2(h);  // 133−s−h ∈ [−121, 127]
  for (int64_t i = 0; i < n; ++i) {
    const float k = std::nearbyint(x[i] * f1 * f2);
    q[i] = static_cast<int8_t>(std::min(std::max(k, -127.0f), 127.0f));
  }
}

// out = float(q)·2^(s−133) for one block
void dequantize_block_mul(float* out, const int8_t* q, uint8_t s, int64_t n) {
  const float scale = s == 0xFF ? NAN : std::ldexp(1.0f, int(s) - 133);  // 2^(s−127)/64 (subnormal for s < 7: ldexp)
  for (int64_t i = 0; i < n; ++i) out[i] = float(q[i]) * scale;
}

void dequantize_block_bf16(float* out, const int8_t* q, uint8_t s, int64_t n) {
  if (s == 0 || s == 0xFF) return dequantize_block_mul(out, q, s, n);
  const float one = std::bit_cast<float>(uint32_t(s) << 23);  // 2^(s−127), the implicit one
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t sign = q[i] < 0 ? 1u : 0u;
    const uint32_t a = static_cast<uint32_t>(q[i] < 0 ? -q[i] : q[i]);  // |q| ≤ 127
    // bf16: 1 sign bit | 8 exponent bits | 7 mantissa bits; f32 is bf16 followed by 16 zeros
    const uint32_t bf16 = (sign << 15) | (uint32_t(s) << 7) | ((a & 63u) << 1);
    const float v = std::bit_cast<float>(bf16 << 16);  // ±2^(s−127)·(1 + (|q|&63)/64)
    out[i] = (a & 64u) ? v : v - std::copysign(one, v);  // integer bit clear: drop the one
  }
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
