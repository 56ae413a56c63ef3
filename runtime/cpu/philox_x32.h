// runtime/cpu/philox_x32.h — the CPU backend's Philox words 128 at a time (AVX2), and the dropout
// masks of the fused CPU kernels drawn from them (layer_norm.cpp, sdpa.cpp, dropout.cpp). Private
// to runtime/cpu/: the contract (DropoutMask, dropout_keep) is runtime/kernels/dropout.h.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "runtime/cpu_features.h"
#include "runtime/kernels/dropout.h"

namespace mase::cpu {

// 128 consecutive words of a Philox stream: w[4·l + k] = philox4x32(counter + l, key)[k] for
// l < 32, the words of elements 4·counter .. 4·counter + 127 (philox_word's order). With AVX2
// 8 counters are the 8 lanes of a register: a round is 4 vpmuludq (32×32→64 bits, on the
// even lanes and then the odd ones) plus shifts, blends and xors — ~18 instructions for 8
// blocks where 8 scalar calls take ~80. A round depends on the one before (~10 cycles of
// latency), so four independent groups of 8 blocks run side by side to keep the core busy
// (measured: 1 group 1.7, 2 groups 0.95, 4 groups 0.5 ns per word; scalar 2.0); a 4×8
// transpose per group puts the words in stream order. Attention draws B·NH·T² words
// per call, again in backward: one block at a time, that cost as much as the attention's
// GEMMs (docs/performance.md). Bit for bit the scalar words (tested).
// The same 128 words on 16 lanes (philox_avx512.cpp), for CPUs with AVX-512: 0.74–0.89 ns a
// word against the AVX2 loop's 1.42–1.44 on one Cascade Lake core (throwaway timing loop), as
// the loop below keeps 16 ymm registers of state that GCC spills in every round.
void philox4x32_x32_avx512(uint32_t w[128], uint64_t counter, uint64_t key, uint32_t m0,
                           uint32_t m1, uint32_t w0, uint32_t w1);

inline void philox4x32_x32(uint32_t w[128], uint64_t counter, uint64_t key) {
  static const bool wide = cpu_features().avx512();  // read once (MASE_MAX_CPU_ISA included)
  if (wide)
    return philox4x32_x32_avx512(w, counter, key, kPhiloxM0, kPhiloxM1, kPhiloxW0, kPhiloxW1);
#ifdef __AVX2__
  constexpr int G = 4;  // independent groups of 8 blocks
  __m256i c0[G], c1[G], c2[G], c3[G];
  for (int g = 0; g < G; ++g) {
    alignas(32) uint32_t lo[8], hi[8];
    for (int l = 0; l < 8; ++l) {
      const uint64_t c = counter + static_cast<uint64_t>(8 * g + l);
      lo[l] = static_cast<uint32_t>(c);
      hi[l] = static_cast<uint32_t>(c >> 32);
    }
    c0[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    c1[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
    c2[g] = c3[g] = _mm256_setzero_si256();
  }
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxM1));
  // (hi, lo) halves of the 64-bit products a·m, lane by lane
  auto mul = [](__m256i a, __m256i m, __m256i& h, __m256i& l) {
    const __m256i even = _mm256_mul_epu32(a, m);                         // lanes 0, 2, 4, 6
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
    h = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    l = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  };
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {  // as philox4x32_10 (runtime/philox.h)
    const __m256i key0 = _mm256_set1_epi32(static_cast<int>(k0));
    const __m256i key1 = _mm256_set1_epi32(static_cast<int>(k1));
    for (int g = 0; g < G; ++g) {
      __m256i hi0, lo0, hi1, lo1;
      mul(c0[g], m0, hi0, lo0);
      mul(c2[g], m1, hi1, lo1);
      c0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[g]), key0);
      c2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[g]), key1);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  for (int g = 0; g < G; ++g) {
    // transpose: c_k holds word k of blocks 0..7; the stream wants block 0's 4 words, then 1's
    const __m256i t0 = _mm256_unpacklo_epi32(c0[g], c1[g]);
    const __m256i t1 = _mm256_unpackhi_epi32(c0[g], c1[g]);
    const __m256i t2 = _mm256_unpacklo_epi32(c2[g], c3[g]);
    const __m256i t3 = _mm256_unpackhi_epi32(c2[g], c3[g]);
    const __m256i b04 = _mm256_unpacklo_epi64(t0, t2), b15 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i b26 = _mm256_unpacklo_epi64(t1, t3), b37 = _mm256_unpackhi_epi64(t1, t3);
    auto* out = reinterpret_cast<__m256i*>(w + 32 * g);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(b04, b15, 0x20));  // blocks 0, 1
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(b26, b37, 0x20));  // blocks 2, 3
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(b04, b15, 0x31));  // blocks 4, 5
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(b26, b37, 0x31));  // blocks 6, 7
  }
#else
  for (int l = 0; l < 32; ++l) {
    const std::array<uint32_t, 4> r = philox4x32(counter + static_cast<uint64_t>(l), key);
    for (int k = 0; k < 4; ++k) w[4 * l + k] = r[k];
  }
#endif
}


// factor[j] = scale or 0: the multipliers of elements first .. first + n − 1 of `m`'s stream
// (the fused kernels apply a row's mask with one vectorised multiply).
// Words come 128 at a time (philox4x32_x32); the select loop vectorises.
template <class T>
inline void dropout_factors(T* factor, int64_t first, int64_t n, const DropoutMask& m) {
  const T scale = static_cast<T>(m.scale);
  uint32_t w[128];
  for (int64_t j = 0; j < n;) {
    const uint64_t e = static_cast<uint64_t>(first + j), block = e / 4;
    philox4x32_x32(w, m.offset + block, m.seed);  // elements 4·block .. 4·block + 127
    const int64_t i0 = static_cast<int64_t>(e - 4 * block), len = std::min(128 - i0, n - j);
    for (int64_t i = 0; i < len; ++i)
      factor[j + i] = dropout_keep(w[i0 + i], m.threshold) ? scale : T(0);
    j += len;
  }
}

// keep[j] = 1 if element first + j of `m`'s stream is kept, else 0, for j < n: the mask as
// bytes, drawn as dropout_factors draws it. The fused Add & Norm (runtime/cpu/layer_norm.cpp)
// stores these bytes in its forward and reads them in its backward: a byte read back costs
// far less than drawing the word again.
inline void dropout_keep_mask(uint8_t* keep, int64_t first, int64_t n, const DropoutMask& m) {
  uint32_t w[128];
  for (int64_t j = 0; j < n;) {
    const uint64_t e = static_cast<uint64_t>(first + j), block = e / 4;
    philox4x32_x32(w, m.offset + block, m.seed);  // elements 4·block .. 4·block + 127
    const int64_t i0 = static_cast<int64_t>(e - 4 * block), len = std::min(128 - i0, n - j);
    for (int64_t i = 0; i < len; ++i) keep[j + i] = dropout_keep(w[i0 + i], m.threshold) ? 1 : 0;
    j += len;
  }
}

}  // namespace mase::cpu
