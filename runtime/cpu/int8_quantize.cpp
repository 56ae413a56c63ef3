// runtime/cpu/int8_quantize.cpp — activation codes for the int8 GEMM: the fp32 rows of x turned
// into int8 codes and scales on the fly, once per Linear call (quant/integer_linear.cpp), so
// this pass runs over every activation of an integer model's forward and must keep up with
// memory. The contract: runtime/kernels/int8_gemm.h. AVX2 here (the build's x86-64-v3); the
// MXINT8 rows also in AVX-512 (int8_quantize_avx512.cpp), chosen at run time.
//
// Measured on a Zen 5 (2 threads, 8192 × 128; `mase-bench --suite int8 --benchmark_filter=
// int8/quantize`): the integer quantizer 0.04–0.06 ns an element; MXINT8 0.25 ns in the first
// AVX2 loop, which reduced each block's max to a scalar and broadcast the scale back (a
// ~70-cycle chain per block), now ~0.12 ns (AVX2) and 0.06–0.08 ns (AVX-512, four blocks at a
// time) with the block's exponent kept in vector registers, as below.
#include "runtime/kernels/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include "runtime/cpu/int8_tile.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/parallel.h"

namespace mase::cpu {

// ---- activation codes: integer(width ≤ 8, frac_width) ---------------------------------------

void int8_quantize_integer(int8_t* q, float* row_scale, const float* x, int64_t rows, int64_t K,
                           int width, int frac_width, bool offset) {
  MASE_CHECK(width >= 1 && width <= 8, ConfigError,
             "[int8_quantize_integer] expected a width of 1..8, got ", width);
  const float scale = std::ldexp(1.0f, frac_width), inv = std::ldexp(1.0f, -frac_width);
  const float lo = -std::ldexp(1.0f, width - 1), hi = std::ldexp(1.0f, width - 1) - 1.0f;
  // One element: RNE in the default rounding mode (as quant_scalar's integer_one), clamped,
  // NaN noted for the row and coded 0.
  auto one = [&](float xv, int& nan) {
    const float v = xv * scale;
    nan |= v != v;
    float c = std::nearbyint(v);
    c = c < lo ? lo : c;
    c = c > hi ? hi : c;
    return static_cast<int8_t>(static_cast<int>(v == v ? c : 0.0f));
  };
  const __m256 vs = _mm256_set1_ps(scale), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const int8_t flip = offset ? int8_t(0x80) : 0;  // offset codes: a ^ 0x80 (int8_gemm.h)
  const __m256i vflip = _mm256_set1_epi8(flip);
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(K, 1)),
               [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * K;
      int8_t* qr = q + r * K;
      int nan = 0;
      int64_t k = 0;
      __m256 unordered = _mm256_setzero_ps();
      for (; k + 32 <= K; k += 32) {  // 32 floats → 32 bytes: round, clamp, convert, pack
        __m256i w[4];
        for (int u = 0; u < 4; ++u) {
          const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + k + 8 * u), vs);
          unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
          __m256 c = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          c = _mm256_min_ps(_mm256_max_ps(c, vlo), vhi);  // NaN → lo here; the row is NaN anyway
          w[u] = _mm256_cvtps_epi32(c);
        }
        // int32 → int16 → int8 with saturation (values are in range already); the packs work
        // per 128-bit lane, so a final permute puts the 32 bytes back in order
        const __m256i h01 = _mm256_packs_epi32(w[0], w[1]), h23 = _mm256_packs_epi32(w[2], w[3]);
        const __m256i b = _mm256_packs_epi16(h01, h23);
        const __m256i ordered = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + k), _mm256_xor_si256(ordered, vflip));
      }
      nan |= _mm256_movemask_ps(unordered) != 0;
      for (; k < K; ++k) qr[k] = int8_t(one(xr[k], nan) ^ flip);
      row_scale[r] = nan ? NAN : inv;
    }
  });
}

// ---- activation codes: mxint8 ------------------------------------------------------------------
// The codes and exponents of runtime/cpu/mxint8.cpp's quantize_block, 32 at a time: the block's
// largest |x| as bits (|x| orders like its bit pattern), s = its exponent field (0xFF: NaN or
// inf), q = clamp(RNE((x·f1)·f2), ±127) with f1·f2 = 2^(133−s), split in two when s < 6 — the
// same multiplies in the same order, so the same codes (tested). Scales come out as fp32
// 2^(s−133). Everything stays in vector registers: the max is spread to all lanes, and f1, f2
// and the scale are built there as float bits from s (int8_quantize_avx512.cpp, the same steps
// on 16 lanes, explains each).
namespace {

// Inlined into the row loop: as a call, its constants were rebuilt for every block.
__attribute__((always_inline)) inline void mxint8_block_avx2(int8_t* q, float* scale,
                                                             const float* x, int64_t n,
                                                             __m256i flip) {
  alignas(32) float buf[32];
  const float* src = x;
  if (n < 32) {  // a short last block, zero-padded (zeros change no max)
    std::memset(buf, 0, sizeof buf);
    std::memcpy(buf, x, size_t(n) * 4);
    src = buf;
  }
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256 v[4];
  __m256i m = _mm256_setzero_si256();
  for (int u = 0; u < 4; ++u) {
    v[u] = _mm256_loadu_ps(src + 8 * u);
    m = _mm256_max_epi32(m, _mm256_and_si256(_mm256_castps_si256(v[u]), abs_mask));
  }
  // the max in all 8 lanes: swap halves, then pairs, then neighbours
  m = _mm256_max_epi32(m, _mm256_permute2x128_si256(m, m, 1));
  m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm256_max_epi32(m, _mm256_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m256i s = _mm256_srli_epi32(m, 23);
  const __m256i nonfinite = _mm256_cmpeq_epi32(s, _mm256_set1_epi32(0xFF));  // all ones or zeros
  const __m256i h = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(6), s), _mm256_set1_epi32(6));
  const __m256 f1 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(260), _mm256_add_epi32(s, h)), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, _mm256_set1_epi32(127)), 23));
  const __m256i normal = _mm256_cmpgt_epi32(s, _mm256_set1_epi32(6));
  __m256i sc = _mm256_blendv_epi8(
      _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_add_epi32(s, _mm256_set1_epi32(16))),
      _mm256_slli_epi32(_mm256_sub_epi32(s, _mm256_set1_epi32(6)), 23), normal);
  sc = _mm256_blendv_epi8(sc, _mm256_set1_epi32(0x7FC00000), nonfinite);
  _mm_store_ss(scale, _mm_castsi128_ps(_mm256_castsi256_si128(sc)));
  // codes: (x·f1)·f2 (f2 = 1, one multiply, unless the block is tiny), rounded to nearest
  // even, converted, raised to −127; the saturating packs below clamp at 127 (the bounds are
  // integers, so clamping after rounding equals clamping before)
  const bool small = _mm256_testz_si256(h, h) == 0;
  const __m256i lo = _mm256_set1_epi32(-127);
  __m256i w[4];
  for (int u = 0; u < 4; ++u) {
    __m256 c = _mm256_mul_ps(v[u], f1);
    if (small) c = _mm256_mul_ps(c, f2);
    c = _mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    w[u] = _mm256_max_epi32(_mm256_cvtps_epi32(c), lo);
  }
  // int32 → int16 → int8 with saturation (per 128-bit lane, so a permute restores the order);
  // a NaN block: 0
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(w[0], w[1]), _mm256_packs_epi32(w[2], w[3]));
  const __m256i codes = _mm256_xor_si256(flip, _mm256_andnot_si256(
      nonfinite, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))));
  if (n == 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), codes);
  } else {
    alignas(32) int8_t out[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), codes);
    std::memcpy(q, out, size_t(n));
  }
}

}  // namespace

void int8_quantize_mxint8(int8_t* q, float* scales, const float* x, int64_t rows, int64_t K,
                          bool offset) {
  const int64_t nb = (K + 31) / 32;
  static const bool avx512 = cpu_features().avx512();
  const __m256i flip = _mm256_set1_epi8(offset ? int8_t(0x80) : 0);  // offset codes: a ^ 0x80
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(K, 1)),
               [&](int64_t r0, int64_t r1) {
    if (avx512) {
      mxint8_codes_avx512(q, scales, x, r0, r1, K, offset);
      return;
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t k0 = b * 32;
        mxint8_block_avx2(q + r * K + k0, scales + r * nb + b, x + r * K + k0,
                          std::min<int64_t>(32, K - k0), flip);
      }
  });
}

}  // namespace mase::cpu
