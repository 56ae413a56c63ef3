// runtime/cpu/int8_gemm_avx2.cpp — the AVX2 microkernel of the int8 GEMM: a 4 × 16 tile of C,
// all of K, with vpmaddubsw + vpmaddwd. The fallback for CPUs without VNNI (AMD Zen 3, older
// Intel). Read int8_tile.h first, then int8_gemm_vnni.cpp (the same tile with one instruction).
//
// AVX2 has no 4-way byte dot product; it takes two steps per group of 4 k-values:
//   vpmaddubsw  u8 × s8, adjacent pairs summed into int16:  (a0·b0 + a1·b1), (a2·b2 + a3·b3)
//   vpmaddwd    × 1 and adjacent int16 pairs summed into int32: the 4-term sum per column
// The trap is in the first: its int16 sum SATURATES. With the offset trick of the VNNI kernel
// (u = a + 128 ≤ 255) a pair can reach 2·255·128 = 65,280 > 32,767 and silently clip.
// So this kernel uses the sign trick instead: a·b = |a| · (sign(a)·b), i.e.
//   vpabsb(a) as the unsigned operand (|a| ≤ 128, and |−128| = 128 is right as a u8)
//   vpsignb(b, a) as the signed one (b negated where a < 0, zeroed where a = 0)
// so a pair is at most 2·128·127 = 32,512 and never saturates — provided b ≠ −128, whose
// negation does not fit in a byte. B is the weight, known when packed: int8_pack_b checks it.
// Cost per row and group: abs + 2 × (sign + maddubs + madd + add), against 2 vpdpbusd.
//
// 16 ymm registers only (VNNI has 32 zmm): 8 int32 accumulators, B, a and the temporaries;
// the fp32 sums of scaled mode live in an L1 buffer, updated once per block.
#include <immintrin.h>

#include "runtime/cpu/int8_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

inline int32_t load32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// `groups` groups of 4 k-values into the accumulators s; G > 0: a compile-time count, the loop
// unrolled (the VNNI kernel's dot_groups says why that doubled its speed); G = 0: run time.
template <int MR, int G>
inline void dot_groups(__m256i (&s)[MR][2], const uint8_t* a, int64_t lda, const int8_t*& b,
                       int64_t groups) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t n = G > 0 ? G : groups;
  for (int64_t g = 0; g < n; ++g, b += 64) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    for (int i = 0; i < MR; ++i) {
      const __m256i av = _mm256_set1_epi32(load32(a + i * lda + 4 * g));
      const __m256i ua = _mm256_abs_epi8(av);
      const __m256i p0 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(b0, av));
      const __m256i p1 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(b1, av));
      s[i][0] = _mm256_add_epi32(s[i][0], _mm256_madd_epi16(p0, ones));
      s[i][1] = _mm256_add_epi32(s[i][1], _mm256_madd_epi16(p1, ones));
    }
  }
}

// Any number of groups: eight at a time unrolled, then the rest.
template <int MR>
inline void dot_any(__m256i (&s)[MR][2], const uint8_t* a, int64_t lda, const int8_t*& b,
                    int64_t groups) {
  int64_t g = 0;
  for (; g + 8 <= groups; g += 8) dot_groups<MR, 8>(s, a + 4 * g, lda, b, 8);
  dot_groups<MR, 0>(s, a + 4 * g, lda, b, groups - g);
}

template <int MR, bool Scaled>
void tile(const Int8Tile& t) {
  alignas(32) float f[MR][16] = {};  // fp32 sums in L1: 16 ymm hold only the int32 ones
  __m256i s[MR][2];
  for (int i = 0; i < MR; ++i) s[i][0] = s[i][1] = _mm256_setzero_si256();
  const int8_t* b = t.b;
  for (int64_t blk = 0; blk < t.nblocks; ++blk) {
    const int64_t groups = blk + 1 < t.nblocks ? t.gb : t.gl;
    const uint8_t* a = t.a + blk * 4 * t.gb;  // packed A: each block padded to gb groups
    for (int i = 0; i < MR; ++i) s[i][0] = s[i][1] = _mm256_setzero_si256();
    if (groups == 8) dot_groups<MR, 8>(s, a, t.lda, b, 8);  // MXINT8: 32 = 8 groups of 4
    else dot_any<MR>(s, a, t.lda, b, groups);
    if constexpr (Scaled) {
      const __m256 sb0 = _mm256_loadu_ps(t.sb + blk * 16), sb1 = _mm256_loadu_ps(t.sb + blk * 16 + 8);
      for (int i = 0; i < MR; ++i) {
        const __m256 sa = _mm256_set1_ps(t.sa[i * t.lds + blk]);
        _mm256_store_ps(f[i], _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i][0]), _mm256_mul_ps(sb0, sa),
                                              _mm256_load_ps(f[i])));
        _mm256_store_ps(f[i] + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i][1]),
                                                  _mm256_mul_ps(sb1, sa), _mm256_load_ps(f[i] + 8)));
      }
    }
  }
  // store: the last panel's columns may be fewer than 16
  for (int i = 0; i < MR; ++i) {
    if constexpr (Scaled) {
      float* c = t.c + i * t.ldc;
      if (t.bias)
        for (int j = 0; j < t.nv; ++j) c[j] = f[i][j] + t.bias[j];
      else
        for (int j = 0; j < t.nv; ++j) c[j] = f[i][j];
    } else {
      alignas(32) int32_t out[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), s[i][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), s[i][1]);
      int32_t* c = t.ci + i * t.ldc;
      for (int j = 0; j < t.nv; ++j) c[j] = out[j];
    }
  }
}

}  // namespace

void int8_tile_avx2(const Int8Tile& t) {
  with_rows<4>(t.mr, [&](auto mr) {
    if (t.sa) tile<decltype(mr)::value, true>(t);
    else tile<decltype(mr)::value, false>(t);
  });
}

}  // namespace mase::cpu
