// runtime/cpu/philox_avx512.cpp — philox4x32_x32 (philox_x32.h) on 16 lanes: the same 128
// words, bit for bit (tests/runtime/test_random.cpp), for CPUs with AVX-512. Compiled with
// -mavx512f (runtime/CMakeLists.txt) and includes nothing shared (runtime/cpu/int8_tile.h
// says why), so the round constants come in as arguments.
//
// Why: attention dropout draws B·NH·T² words in the forward and again in the backward, and the
// AVX2 generator's four groups of 8 blocks need 16 ymm registers for their state alone — GCC
// spills them in every round (perf of the backward with dropout: the generator's loop is mostly
// stack traffic). Here 32 zmm registers hold two groups of 16 blocks with room to spare, a
// round is the AVX2 one at twice the width (vpmuludq on the even lanes, then the odd ones;
// blends by mask), and a 4×4 transpose of 128-bit lanes puts the words in stream order.
#include <immintrin.h>

#include <cstdint>

// GCC 12 warns that the shift intrinsics' own _mm512_undefined_epi32() is used uninitialized:
// a false positive of the intrinsic header (int8_gemm_vnni.cpp has the same lines).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mase::cpu {

void philox4x32_x32_avx512(uint32_t w[128], uint64_t counter, uint64_t key, uint32_t m0,
                           uint32_t m1, uint32_t w0, uint32_t w1) {
  constexpr int G = 2;  // groups of 16 blocks: 32 blocks = 128 words
  __m512i c0[G], c1[G], c2[G], c3[G];
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  for (int g = 0; g < G; ++g) {
    // 64-bit counters counter + 16g + l for l < 16, split into low and high words
    const __m512i base = _mm512_set1_epi64(static_cast<long long>(counter + 16u * g));
    const __m512i lo8 = _mm512_add_epi64(base, lane);                            // l = 0..7
    const __m512i hi8 = _mm512_add_epi64(lo8, _mm512_set1_epi64(8));             // l = 8..15
    const __m512i idx_lo = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i idx_hi = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    c0[g] = _mm512_permutex2var_epi32(lo8, idx_lo, hi8);  // the low words, lanes 0..15
    c1[g] = _mm512_permutex2var_epi32(lo8, idx_hi, hi8);  // the high words
    c2[g] = c3[g] = _mm512_setzero_si512();
  }
  const __m512i vm0 = _mm512_set1_epi32(static_cast<int>(m0));
  const __m512i vm1 = _mm512_set1_epi32(static_cast<int>(m1));
  constexpr __mmask16 kOdd = 0xAAAA;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const __m512i key0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i key1 = _mm512_set1_epi32(static_cast<int>(k1));
    for (int g = 0; g < G; ++g) {
      // (hi, lo) of the 64-bit products c·m lane by lane: even lanes, then the odd ones
      const __m512i e0 = _mm512_mul_epu32(c0[g], vm0);
      const __m512i o0 = _mm512_mul_epu32(_mm512_srli_epi64(c0[g], 32), vm0);
      const __m512i e1 = _mm512_mul_epu32(c2[g], vm1);
      const __m512i o1 = _mm512_mul_epu32(_mm512_srli_epi64(c2[g], 32), vm1);
      const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e0, 32), o0);
      const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, e0, _mm512_slli_epi64(o0, 32));
      const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e1, 32), o1);
      const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, e1, _mm512_slli_epi64(o1, 32));
      c0[g] = _mm512_xor_si512(_mm512_xor_si512(hi1, c1[g]), key0);
      c2[g] = _mm512_xor_si512(_mm512_xor_si512(hi0, c3[g]), key1);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 += w0;
    k1 += w1;
  }
  for (int g = 0; g < G; ++g) {
    // c_k holds word k of blocks 0..15. In each 128-bit lane L, the unpacks give block 4L + j's
    // four words (b_j, j < 4); then a 4×4 transpose of 128-bit lanes puts blocks in order.
    const __m512i t0 = _mm512_unpacklo_epi32(c0[g], c1[g]), t1 = _mm512_unpackhi_epi32(c0[g], c1[g]);
    const __m512i t2 = _mm512_unpacklo_epi32(c2[g], c3[g]), t3 = _mm512_unpackhi_epi32(c2[g], c3[g]);
    const __m512i b0 = _mm512_unpacklo_epi64(t0, t2), b1 = _mm512_unpackhi_epi64(t0, t2);
    const __m512i b2 = _mm512_unpacklo_epi64(t1, t3), b3 = _mm512_unpackhi_epi64(t1, t3);
    const __m512i x01 = _mm512_shuffle_i32x4(b0, b1, 0x44), y01 = _mm512_shuffle_i32x4(b2, b3, 0x44);
    const __m512i x23 = _mm512_shuffle_i32x4(b0, b1, 0xEE), y23 = _mm512_shuffle_i32x4(b2, b3, 0xEE);
    auto* out = reinterpret_cast<__m512i*>(w + 64 * g);
    _mm512_storeu_si512(out + 0, _mm512_shuffle_i32x4(x01, y01, 0x88));  // blocks 0..3
    _mm512_storeu_si512(out + 1, _mm512_shuffle_i32x4(x01, y01, 0xDD));  // blocks 4..7
    _mm512_storeu_si512(out + 2, _mm512_shuffle_i32x4(x23, y23, 0x88));  // blocks 8..11
    _mm512_storeu_si512(out + 3, _mm512_shuffle_i32x4(x23, y23, 0xDD));  // blocks 12..15
  }
}

}  // namespace mase::cpu
