// runtime/cpu/dropout.cpp — the Philox dropout mask on the CPU (see dropout.h): drawn as bytes
// by dropout_keep_mask, applied by dropout_forward. Parallel over chunks of elements; element
// i's mask bit is word i of the stream, whichever thread draws it.
//
// Philox4x32-10 (runtime/philox.h) does ten rounds of two 32×32 → 64-bit multiplies per
// block of 4 elements. One block at a time those multiplies are scalar (~4.6 ns an element
// here, 6× a memcpy of the element); GCC does not vectorise them well across blocks either.
// With AVX2, 8 blocks sit in the 8 lanes of a register: _mm256_mul_epu32 multiplies the even
// lanes, a shift brings the odd ones down, blends put the high and low halves back in lane
// order — 18 instructions a round for 32 elements, bit for bit the scalar words (tested
// against philox_word in tests/runtime/test_cpu_kernels.cpp). The 4 keep vectors (word l of
// blocks 0..7) are packed to bytes and transposed in-lane into element order 4j + l.
#include "runtime/cpu/dropout.h"

#include <algorithm>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

constexpr int64_t kGroup = 32;  // elements per 8 Philox blocks

// keep32[e] for the 32 elements of blocks `block` .. block + 7 (element 4j + l: word l of
// block + j), as 0/1 bytes.
void keep_group(uint8_t* keep32, uint64_t block, uint64_t key, uint32_t threshold) {
#if defined(__AVX2__)
  alignas(32) uint32_t lo[8], hi[8];
  for (int j = 0; j < 8; ++j) {
    const uint64_t c = block + static_cast<uint64_t>(j);
    lo[j] = static_cast<uint32_t>(c);
    hi[j] = static_cast<uint32_t>(c >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256i w0 = _mm256_set1_epi32(static_cast<int>(0x9E3779B9u));
  const __m256i w1 = _mm256_set1_epi32(static_cast<int>(0xBB67AE85u));
  __m256i k0 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(key)));
  __m256i k1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(key >> 32)));
  for (int round = 0; round < 10; ++round) {
    // 64-bit products of the even lanes, and of the odd lanes shifted down
    const __m256i pe0 = _mm256_mul_epu32(c0, m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    const __m256i pe1 = _mm256_mul_epu32(c2, m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
    const __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
    const __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), k0);  // as philox4x32_10
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), k1);
    c1 = lo1;
    c3 = lo0;
    k0 = _mm256_add_epi32(k0, w0);
    k1 = _mm256_add_epi32(k1, w1);
  }
  // kept iff (w >> 8) >= threshold, i.e. > threshold − 1 (signed is safe: both below 2^24)
  const __m256i t = _mm256_set1_epi32(static_cast<int>(threshold) - 1);
  auto keep = [&](__m256i w) { return _mm256_cmpgt_epi32(_mm256_srli_epi32(w, 8), t); };
  // bytes per 128-bit lane: [word 0 of blocks 0-3 | word 1 | word 2 | word 3] (blocks 4-7 in
  // the high lane), then a 4×4 transpose in each lane gives element order
  const __m256i w01 = _mm256_packs_epi32(keep(c0), keep(c1));
  const __m256i w23 = _mm256_packs_epi32(keep(c2), keep(c3));
  const __m256i bytes = _mm256_packs_epi16(w01, w23);
  const __m256i order = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                         0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m256i ones = _mm256_and_si256(_mm256_shuffle_epi8(bytes, order), _mm256_set1_epi8(1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(keep32), ones);
#else
  for (int j = 0; j < 8; ++j) {
    const std::array<uint32_t, 4> w = philox4x32(block + static_cast<uint64_t>(j), key);
    for (int l = 0; l < 4; ++l) keep32[4 * j + l] = dropout_keep(w[l], threshold) ? 1 : 0;
  }
#endif
}

}  // namespace

void dropout_keep_mask(uint8_t* keep, int64_t first, int64_t n, const DropoutMask& m) {
  alignas(32) uint8_t group[kGroup];
  const int64_t end = first + n;
  int64_t e = first;
  while (e < end) {
    const int64_t base = e / 4 * 4;  // the group starts at e's block
    const int64_t stop = std::min(end, base + kGroup);
    if (e == base && stop == base + kGroup) {  // a whole group: straight into keep
      keep_group(keep + (e - first), m.offset + static_cast<uint64_t>(e / 4), m.seed, m.threshold);
      e = stop;
      continue;
    }
    keep_group(group, m.offset + static_cast<uint64_t>(e / 4), m.seed, m.threshold);
    for (; e < stop; ++e) keep[e - first] = group[e - base];
  }
}

template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale) {
  const DropoutMask m{true, seed, offset, threshold, double(scale)};
  parallel_for(0, (n + kGroup - 1) / kGroup, kGrainElems / kGroup, [&](int64_t lo, int64_t hi) {
    uint8_t keep[kGrainElems];
    for (int64_t g0 = lo; g0 < hi; g0 += kGrainElems / kGroup) {  // pieces of kGrainElems
      const int64_t i0 = g0 * kGroup, len = std::min({kGrainElems, hi * kGroup - i0, n - i0});
      dropout_keep_mask(keep, i0, len, m);
      // a select, not ×mask (p = 1 has scale 0); the byte widened to int so the loop vectorises
      const T* __restrict x = inp + i0;
      T* __restrict y = out + i0;
      const T s = scale;
      for (int64_t k = 0; k < len; ++k) y[k] = static_cast<int32_t>(keep[k]) != 0 ? x[k] * s : T(0);
    }
  });
}

template void dropout_forward<float>(float*, const float*, int64_t, uint64_t, uint64_t, uint32_t,
                                     float);
template void dropout_forward<double>(double*, const double*, int64_t, uint64_t, uint64_t, uint32_t,
                                      double);

}  // namespace mase::cpu
