// runtime/cpu/bf16_pack_avx512.cpp — fp32 operands rounded to bf16 into the AMX tiles' layouts
// (runtime/cpu/bf16_amx_tile.h): what both bf16 tile kernels read — AMX's (bf16_gemm_amx.cpp)
// and the vdpbf16ps twin of it for CPUs without AMX (bf16_gemm_avx512.cpp). Compiled with
// -mavx512bf16 (runtime/CMakeLists.txt), no AMX flag, and called only where the CPU has
// AVX512-BF16 (every CPU with AMX-BF16 has it too).
//
// The packers round with AVX512-BF16's vcvtne2ps2bf16 (32 floats an instruction) and fall back
// to the integer rule for a group of 32 holding a subnormal, which that instruction flushes to
// zero — the same bits as bf16_from_f32 everywhere, 1.6–2.8× faster than the integer rule alone
// (docs/performance.md, "Packing for the tiles").
#include <immintrin.h>

#include "runtime/cpu/bf16_amx_tile.h"

// GCC 12's AVX-512 headers build the "undefined" operand of unmasked shifts and casts as
// `__m256i __Y = __Y;`, which -Wmaybe-uninitialized reports once inlined: not our variable.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mase::cpu {
namespace {


// 16 fp32 → 16 bf16, to nearest, ties to even, NaN kept NaN and made quiet: the integer rule of
// bf16_from_f32 (runtime/kernels/bf16.h), so every path rounds to the same bits. (vcvtneps2bf16
// would flush subnormal inputs to zero.)
inline __m256i round16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i up = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i r = _mm512_mask_or_epi32(_mm512_srli_epi32(up, 16), nan, _mm512_srli_epi32(bits, 16),
                                         _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

// 32 fp32 → 32 bf16 (lo's in words 0–15, hi's in 16–31) by the same rule. vcvtne2ps2bf16 rounds
// to nearest even and quiets a NaN exactly as round16 does, but reads a subnormal input as zero:
// such a group (rare in activations and weights) takes round16. A lane is subnormal when its
// |bits| − 1 is below 0x7fffff (|bits| in 1 .. 0x7fffff: exponent 0, mantissa not).
inline __m512i round32(__m512 lo, __m512 hi) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i top = _mm512_set1_epi32(0x7fffff);
  auto subnormal = [&](__m512 x) {
    const __m512i bits = _mm512_and_si512(_mm512_castps_si512(x), abs);
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(bits, one), top);
  };
  if (__builtin_expect(_kortestz_mask16_u8(subnormal(lo), subnormal(hi)), 1))
    return _mm512_castps_si512(reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(hi, lo)));
  return _mm512_inserti64x4(_mm512_castsi256_si512(round16(lo)), round16(hi), 1);
}

// rows k and k + 1 of 16 columns → 16 words, each a pair (k in the low half, k + 1 in the high):
// what a row of a B tile holds, and of the transposed A before it is turned
inline __m512i round_pairs(__m512 x0, __m512 x1) {
  const __m512i interleave =  // word 2c takes word c (x0's), word 2c + 1 word 16 + c (x1's)
      _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, round32(x0, x1));
}

// a 16 × 16 block of 32-bit words transposed in registers (r[i] row i in, column i out): pairs
// of rows interleaved by words, then by pairs of words, then 128-bit lanes swapped twice
inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + j], lane L: column 4L + j of rows i .. i + 3
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i v = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i w = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i w2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
    r[j] = _mm512_shuffle_i32x4(v, v2, 0x88);
    r[4 + j] = _mm512_shuffle_i32x4(w, w2, 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(v, v2, 0xdd);
    r[12 + j] = _mm512_shuffle_i32x4(w, w2, 0xdd);
  }
}

// the first n of 16 lanes (none when n ≤ 0)
inline __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

void amx_pack_a(const float* A, int64_t lda, bool ta, int64_t i0, int64_t rows, int64_t K,
                int64_t kp, uint16_t* out) {
  const int64_t rows_pad = round_up(rows, 2 * kAmxRows), tiles = kp / kAmxK;
  // element (r, k) of the chunk: in tile (r / 16, k / 32), at row r % 16, column k % 32
  auto at = [&](int64_t r, int64_t k) {
    return out + ((r / kAmxRows) * tiles + k / kAmxK) * 512 + (r % kAmxRows) * kAmxK + k % kAmxK;
  };
  if (!ta) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = A + (i0 + r) * lda;
      for (int64_t k = 0; k < kp; k += kAmxK) {  // a tile row: zero past K (masks of 0 when k ≥ K)
        const __m512 lo = _mm512_maskz_loadu_ps(first(K - k), src + k);
        const __m512 hi = _mm512_maskz_loadu_ps(first(K - k - 16), src + k + 16);
        _mm512_storeu_si512(at(r, k), round32(lo, hi));
      }
    }
  } else {
    // op(A)[i, k] = A[k, i0 + i]: a tile at a time. Rows k and k + 1 of A, 16 values of i each,
    // interleave into 16 words (a pair of k for each i); 16 such vectors, one per pair, are the
    // tile transposed — turned in registers, then stored a tile row (an i) at a time
    for (int64_t r = 0; r < rows; r += 16) {
      const __mmask16 m = first(rows - r);
      for (int64_t kt = 0; kt < kp / kAmxK; ++kt) {
        __m512i t[16];
        for (int64_t p = 0; p < 16; ++p) {
          const int64_t k = kt * kAmxK + 2 * p;
          const __m512 x0 = k < K ? _mm512_maskz_loadu_ps(m, A + k * lda + i0 + r) : _mm512_setzero_ps();
          const __m512 x1 = k + 1 < K ? _mm512_maskz_loadu_ps(m, A + (k + 1) * lda + i0 + r) : _mm512_setzero_ps();
          t[p] = round_pairs(x0, x1);
        }
        transpose16(t);
        const int64_t n = rows - r < 16 ? rows - r : 16;
        for (int64_t u = 0; u < n; ++u) _mm512_storeu_si512(at(r + u, kt * kAmxK), t[u]);
      }
    }
  }
  for (int64_t r = rows; r < rows_pad; ++r)
    for (int64_t k = 0; k < kp; k += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at(r, k)), _mm256_setzero_si256());
}

void amx_pack_b(const float* B, int64_t ldb, bool tb, int64_t N, int64_t K, int64_t kp,
                int64_t nb0, int64_t nb1, uint16_t* out) {
  const int64_t tiles = kp / kAmxK;
  for (int64_t nb = nb0; nb < nb1; ++nb) {
    uint32_t* block = reinterpret_cast<uint32_t*>(out + nb * kp * 16);  // a word = a pair of k
    if (tb) {  // op(B)[k, n] = B[n, k]: a column of op(B) is a row of B, its pairs side by side
      for (int64_t kb = 0; kb < tiles; ++kb) {
        const int64_t k = kb * kAmxK;
        __m512i t[16];  // t[c]: the 16 pairs of column nb · 16 + c; turned, t[r] is tile row r
        for (int64_t c = 0; c < 16; ++c) {
          const int64_t n = nb * 16 + c;
          t[c] = n < N ? round32(_mm512_maskz_loadu_ps(first(K - k), B + n * ldb + k),
                                 _mm512_maskz_loadu_ps(first(K - k - 16), B + n * ldb + k + 16))
                       : _mm512_setzero_si512();
        }
        transpose16(t);
        for (int64_t r = 0; r < 16; ++r) _mm512_storeu_si512(block + kb * 256 + r * 16, t[r]);
      }
    } else {  // op(B)[k, n] = B[k, n]: rows k and k + 1 of B interleaved, 16 columns at a time
      const __mmask16 m = first(N - nb * 16);
      for (int64_t kb = 0; kb < tiles; ++kb)
        for (int64_t r = 0; r < 16; ++r) {
          const int64_t k = kb * kAmxK + 2 * r;
          const __m512 x0 = k < K ? _mm512_maskz_loadu_ps(m, B + k * ldb + nb * 16) : _mm512_setzero_ps();
          const __m512 x1 = k + 1 < K ? _mm512_maskz_loadu_ps(m, B + (k + 1) * ldb + nb * 16) : _mm512_setzero_ps();
          _mm512_storeu_si512(block + kb * 256 + r * 16, round_pairs(x0, x1));
        }
    }
  }
}

}  // namespace mase::cpu
