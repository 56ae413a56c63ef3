// runtime/cpu/int8_quantize_avx512.cpp — MXINT8 activation codes with AVX-512: a block of 32
// floats is two registers, and its shared exponent never leaves them.
//
// The codes are those of runtime/cpu/mxint8.cpp's quantize_block (the format's definition,
// runtime/kernels/mxint8.h): for a block whose largest |x| has exponent field s,
//   scale = 2^(s−133),  q = clamp(RNE((x·f1)·f2), ±127)  with f1·f2 = 2^(133−s)
// (split as f1 = 2^(127−s), f2 = 2^6 when s < 6, where 2^(133−s) alone is not a float), and a
// block holding NaN or inf (s = 0xFF) gets codes 0 and scale NaN. Same multiplies in the same
// order, so the same codes (tested, every exponent field, in tests/runtime/test_int8_gemm.cpp).
//
// The first loop (AVX2, then in int8_gemm.cpp) took 0.25 ns an element on a Zen 5 — six times
// the one-scale integer quantizer — because each block went to a scalar and back: the max
// reduced to one lane, moved to a general register, the scale built there and broadcast again,
// the codes stored through a stack buffer: a chain of ~70 cycles per block. Here (and in the
// AVX2 loop of int8_quantize.cpp, which now does the same on 8 lanes) every step is a vector
// operation:
//   |x| as bits      and with 0x7FFFFFFF: for floats ≥ 0 the bit patterns order like the values
//   block max        shuffle + max steps leave the max in *every* lane (no extraction); four
//                    blocks at a time, one per 128-bit quarter (block4 below)
//   s                the max's bits >> 23 (the exponent field; 0xFF for NaN / inf)
//   f1, f2, scale    built as float bits from s with integer shifts, per lane
//   codes            vcvtps2dq (RNE), max with −127, then vpmovsdb (16 int32 → 16 bytes),
//                    whose saturation is the clamp at 127
// 0.06–0.08 ns an element on the Zen 5 (mase-bench's int8/quantize lines). A short last block
// is read and written with masks, its missing lanes read as 0, which changes no max. Compiled
// with -mavx512f/bw/dq/vl (runtime/CMakeLists.txt) and called only on CPUs that have them;
// includes nothing shared (runtime/cpu/int8_tile.h says why).
#include <immintrin.h>

#include "runtime/cpu/int8_tile.h"

// GCC 12 warns that the intrinsics' own _mm512_undefined_*() "may be used uninitialized": a
// known false positive of the intrinsic header, not of this code (as in int8_gemm_vnni.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace mase::cpu {
namespace {

// The max of the 16 lanes, in all 16: swap 256-bit halves, 128-bit quarters, 64-bit pairs,
// neighbours, taking the max each time.
inline __m512i all_lanes_max(__m512i m) {
  m = _mm512_max_epi32(m, _mm512_shuffle_i32x4(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm512_max_epi32(m, _mm512_shuffle_i32x4(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  m = _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
  return _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
}

inline __mmask16 lanes(int64_t n) {  // the first n (0..16) lanes
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// What a block's exponent field s decides, lane by lane (a lane holds its block's s).
struct Exps {
  __m512 f1, f2;    // the two factors of 2^(133−s)
  __m512 scale;     // 2^(s−133), NaN where s = 0xFF
  __mmask16 finite, small;  // s ≠ 0xFF; s < 6 (f2 ≠ 1)
};

__attribute__((always_inline)) inline Exps exps_of(__m512i max_bits) {
  Exps e;
  const __m512i s = _mm512_srli_epi32(max_bits, 23);  // 0..255
  e.finite = _mm512_cmpneq_epi32_mask(s, _mm512_set1_epi32(0xFF));
  // h = 6 where s < 6 (then f1 = 2^(127−s) and f2 = 2^6), else 0 (f2 = 1)
  e.small = _mm512_cmplt_epi32_mask(s, _mm512_set1_epi32(6));
  const __m512i h = _mm512_maskz_mov_epi32(e.small, _mm512_set1_epi32(6));
  // 2^e as float bits: (e + 127) << 23 for a normal e; f1's e = 133 − s − h ∈ [−121, 127]
  e.f1 = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(260), _mm512_add_epi32(s, h)), 23));
  e.f2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h, _mm512_set1_epi32(127)), 23));
  // scale 2^(s−133): normal from s = 7 ((s − 6) << 23); below, the subnormal 1 << (s + 16)
  const __mmask16 normal = _mm512_cmpge_epi32_mask(s, _mm512_set1_epi32(7));
  __m512i sc = _mm512_sllv_epi32(_mm512_set1_epi32(1), _mm512_add_epi32(s, _mm512_set1_epi32(16)));
  sc = _mm512_mask_slli_epi32(sc, normal, _mm512_sub_epi32(s, _mm512_set1_epi32(6)), 23);
  e.scale = _mm512_castsi512_ps(_mm512_mask_mov_epi32(_mm512_set1_epi32(0x7FC00000), e.finite, sc));
  return e;
}

// 16 codes: (x·f1)·f2 (f2 = 1 unless the block is tiny, so one multiply for nearly every
// block), converted with round-to-nearest-even — |x·f1·f2| < 256, so no int32 overflows —
// raised to −127, then narrowed to bytes by vpmovsdb, whose saturation is the clamp at 127
// (and zeros where not finite: a NaN block). Clamping after rounding equals clamping before:
// the bounds are integers. (Packs and a vpermd instead of vpmovsdb measured the same.)
// flip: 0x80 in every byte for offset codes (a ^ 0x80, runtime/kernels/int8_gemm.h), else 0.
__attribute__((always_inline)) inline __m128i codes16(__m512 v, __m512 f1, __m512 f2, bool small,
                                                      __mmask16 finite, __m128i flip) {
  __m512 c = _mm512_mul_ps(v, f1);
  if (small) c = _mm512_mul_ps(c, f2);
  const __m512i i = _mm512_cvt_roundps_epi32(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm_xor_si128(flip, _mm512_maskz_cvtsepi32_epi8(finite, _mm512_max_epi32(i, _mm512_set1_epi32(-127))));
}

inline __m512i abs_bits(__m512 v) {  // |v| as bits: for floats ≥ 0 they order like the values
  return _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF));
}

// One block of up to 32 values (lanes k0 of the first 16, k1 of the next): codes to q, the
// scale to *scale. Inlined into the row loop (as a call, its ~20 constants were rebuilt for
// every block: a third of the time).
__attribute__((always_inline)) inline void block(int8_t* q, float* scale, const float* x,
                                                 __mmask16 k0, __mmask16 k1, __m128i flip) {
  const __m512 v0 = _mm512_maskz_loadu_ps(k0, x), v1 = _mm512_maskz_loadu_ps(k1, x + 16);
  const Exps e = exps_of(all_lanes_max(_mm512_max_epi32(abs_bits(v0), abs_bits(v1))));
  _mm_store_ss(scale, _mm512_castps512_ps128(e.scale));
  _mm_mask_storeu_epi8(q, k0, codes16(v0, e.f1, e.f2, e.small, e.finite, flip));
  _mm_mask_storeu_epi8(q + 16, k1, codes16(v1, e.f1, e.f2, e.small, e.finite, flip));
}

// Four full blocks (128 values) at once: their four maxes reduced side by side, one block per
// 128-bit quarter of one register (9 shuffles and maxes where four all_lanes_max take 16), the
// exponent arithmetic done once for all four, then each quarter broadcast back for its codes.
template <int B>
__attribute__((always_inline)) inline __m512 quarter(__m512 v) {  // quarter B in all four
  return _mm512_shuffle_f32x4(v, v, B * 0x55);
}
template <int B>
__attribute__((always_inline)) inline void codes_of_quarter(int8_t* q, const __m512* v, const Exps& e,
                                                            __m128i flip) {
  const __mmask16 finite = (e.finite >> (4 * B)) & 1 ? 0xFFFF : 0, small_b = (e.small >> (4 * B)) & 1;
  const __m512 f1 = quarter<B>(e.f1), f2 = quarter<B>(e.f2);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * B), codes16(v[2 * B], f1, f2, small_b, finite, flip));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * B + 16), codes16(v[2 * B + 1], f1, f2, small_b, finite, flip));
}
__attribute__((always_inline)) inline void block4(int8_t* q, float* scale, const float* x, __m128i flip) {
  __m512 v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm512_loadu_ps(x + 16 * i);
  __m512i a[4];
  for (int b = 0; b < 4; ++b) a[b] = _mm512_max_epi32(abs_bits(v[2 * b]), abs_bits(v[2 * b + 1]));
  // quarters [a0: 0+2, 1+3 | a1: 0+2, 1+3], the same for a2, a3; then [a0 | a1 | a2 | a3]
  const __m512i x01 = _mm512_max_epi32(_mm512_shuffle_i32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_i32x4(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512i x23 = _mm512_max_epi32(_mm512_shuffle_i32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_i32x4(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
  __m512i m = _mm512_max_epi32(_mm512_shuffle_i32x4(x01, x23, _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_i32x4(x01, x23, _MM_SHUFFLE(3, 1, 3, 1)));
  m = _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));  // within each quarter
  m = _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
  const Exps e = exps_of(m);
  // the four scales sit in lanes 0, 4, 8, 12
  const __m512 sc = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), e.scale);
  _mm_storeu_ps(scale, _mm512_castps512_ps128(sc));
  codes_of_quarter<0>(q, v, e, flip);
  codes_of_quarter<1>(q, v, e, flip);
  codes_of_quarter<2>(q, v, e, flip);
  codes_of_quarter<3>(q, v, e, flip);
}

}  // namespace

void mxint8_codes_avx512(int8_t* q, float* scales, const float* x, int64_t r0, int64_t r1,
                         int64_t K, bool offset) {
  const int64_t nb = (K + 31) / 32, full = K / 32;
  const int64_t rest = K - 32 * full;  // the short last block's length, 0 when none
  const __m128i flip = _mm_set1_epi8(offset ? char(0x80) : 0);
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * K;
    int8_t* qr = q + r * K;
    float* sr = scales + r * nb;
    int64_t b = 0;
    for (; b + 4 <= full; b += 4) block4(qr + 32 * b, sr + b, xr + 32 * b, flip);
    for (; b < full; ++b) block(qr + 32 * b, sr + b, xr + 32 * b, 0xFFFF, 0xFFFF, flip);
    if (rest)
      block(qr + 32 * full, sr + full, xr + 32 * full, lanes(rest), lanes(rest > 16 ? rest - 16 : 0), flip);
  }
}

}  // namespace mase::cpu
