// runtime/cpu/bf16_gemm_avx512.cpp — the AVX512-BF16 microkernels: the bf16 GEMM's 6 × 32 tile
// of C in fp32, all of K, with vdpbf16ps (runtime/cpu/bf16.cpp drives it), and the same
// instruction on operands packed for AMX (avx512_bf16_chunk: the attention's products under
// --precision bf16 on a CPU without AMX, runtime/cpu/sdpa_amx.cpp). Compiled with -mavx512bf16
// (runtime/CMakeLists.txt) and called only on CPUs that have it: AMD Zen 4/5, Intel Cooper Lake
// and Sapphire Rapids; elsewhere their tests say skipped. Read runtime/cpu/int8_gemm_vnni.cpp
// first: the same tile, for bf16 pairs.
//
// vdpbf16ps: in each of 16 fp32 lanes, acc += a0·b0 + a1·b1 for a pair of bf16 from each
// operand (32 bits per lane). B is packed as pairs of k per column (runtime/cpu/bf16.cpp):
// one 64-byte load gives 16 columns × 2 k-values; A's pair (k, k+1) of row i is broadcast.
#include <immintrin.h>

#include "runtime/cpu/bf16_amx_tile.h"
#include "runtime/cpu/bf16_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

inline int32_t load32(const uint16_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// clang 16 (the sanitizer build's compiler, scripts/sanitize.sh) segfaults optimising this loop
// of vdpbf16ps; it compiles it unoptimised. GCC, which builds the product, optimises it.
#if defined(__clang__) && __clang_major__ < 17
#define MASE_CLANG16_OPTNONE __attribute__((optnone))
#else
#define MASE_CLANG16_OPTNONE
#endif

template <int MR>
MASE_CLANG16_OPTNONE void tile(const Bf16Tile& t) {
  const int nv0 = t.nv < 16 ? t.nv : 16, nv1 = t.nv > 16 ? t.nv - 16 : 0;
  const __mmask16 m0 = nv0 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv0) - 1);
  const __mmask16 m1 = nv1 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv1) - 1);
  __m512 c[MR][2];
  for (int i = 0; i < MR; ++i) c[i][0] = c[i][1] = _mm512_setzero_ps();
  const uint16_t* b = t.b;
  for (int64_t p = 0; p < t.pairs; ++p, b += 64) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 32);
    for (int i = 0; i < MR; ++i) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(load32(t.a + i * t.lda + 2 * p));
      c[i][0] = _mm512_dpbf16_ps(c[i][0], a, b0);
      c[i][1] = _mm512_dpbf16_ps(c[i][1], a, b1);
    }
  }
  const __m512 bias0 = t.bias ? _mm512_maskz_loadu_ps(m0, t.bias) : _mm512_setzero_ps();
  const __m512 bias1 = t.bias ? _mm512_maskz_loadu_ps(m1, t.bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_ps(t.c + i * t.ldc, m0, _mm512_add_ps(c[i][0], bias0));
    _mm512_mask_storeu_ps(t.c + i * t.ldc + 16, m1, _mm512_add_ps(c[i][1], bias1));
  }
}

// the first n of 16 lanes (none when n ≤ 0)
inline __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// Rows i .. i + 7 and columns j .. j + 31 of an AmxChunk's C (bf16_amx_tile.h) with vdpbf16ps,
// reading the tiles' layouts directly. B's block of 16 columns holds its pairs of k one after
// the other, 64 bytes each (16 columns × a pair): one load is the B operand of vdpbf16ps, as in
// the GEMM tile above. A's rows sit in tiles of 16 rows × 32 k: the pair (k, k + 1) of row r is
// one 32-bit word, broadcast. 8 rows × 2 vectors = 16 accumulators; A's padding (rows to a
// multiple of 32, k to the tile) is zeros, so a short block computes zeros past the real rows
// and the store leaves them out.
MASE_CLANG16_OPTNONE void chunk_block(const AmxChunk& t, int64_t i, int64_t j) {
  constexpr int MR = 8;
  const uint16_t* b0 = t.b + (j / 16) * t.kp_b * 16 + t.kb0 * 512;
  const uint16_t* b1 = j + 16 < t.N ? b0 + t.kp_b * 16 : b0;  // no second block: the first again
  const uint16_t* a = t.a + (i / 16) * 16 * t.kp + (i % 16) * kAmxK;
  __m512 c[MR][2];
  for (int r = 0; r < MR; ++r) c[r][0] = c[r][1] = _mm512_setzero_ps();
  for (int64_t kt = 0; kt < t.kp / kAmxK; ++kt) {
    const uint16_t *at = a + kt * 512, *bt0 = b0 + kt * 512, *bt1 = b1 + kt * 512;
    for (int p = 0; p < 16; ++p) {  // the tile's 16 pairs of k
      const __m512bh x0 = (__m512bh)_mm512_loadu_si512(bt0 + p * 32);
      const __m512bh x1 = (__m512bh)_mm512_loadu_si512(bt1 + p * 32);
      for (int r = 0; r < MR; ++r) {
        const __m512bh y = (__m512bh)_mm512_set1_epi32(load32(at + r * kAmxK + 2 * p));
        c[r][0] = _mm512_dpbf16_ps(c[r][0], y, x0);
        c[r][1] = _mm512_dpbf16_ps(c[r][1], y, x1);
      }
    }
  }
  // the store, as amx_bf16_chunk's: C = alpha·AB + beta·C (+ bias), then GELU when asked
  const int64_t rows = t.rows - i < MR ? t.rows - i : MR;
  const __m512 alpha = _mm512_set1_ps(t.alpha), beta = _mm512_set1_ps(t.beta);
  alignas(64) float s[32], g[32];
  for (int64_t r = 0; r < rows; ++r) {
    float* crow = t.c + (i + r) * t.ldc + j;
    for (int h = 0; h < 2; ++h) {
      const __mmask16 m = first(t.N - j - 16 * h);  // 0 past N
      __m512 v = _mm512_mul_ps(alpha, c[r][h]);
      if (t.beta != 0.0f) v = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m, crow + 16 * h), v);
      if (t.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, t.bias + j + 16 * h));
      if (t.gelu) _mm512_store_ps(s + 16 * h, v);
      else _mm512_mask_storeu_ps(crow + 16 * h, m, v);
    }
    if (t.gelu) {
      gelu_f32_serial(g, s, 32);
      for (int h = 0; h < 2; ++h)
        _mm512_mask_storeu_ps(crow + 16 * h, first(t.N - j - 16 * h), _mm512_load_ps(g + 16 * h));
    }
  }
}

}  // namespace

void bf16_tile_avx512(const Bf16Tile& t) {
  with_rows<kBf16MR>(t.mr, [&](auto mr) { tile<decltype(mr)::value>(t); });
}

void avx512_bf16_chunk(const AmxChunk& t) {
  for (int64_t j = t.j0; j < t.j1; j += 32)  // a block of 32 columns: B's two 16-column blocks
    for (int64_t i = 0; i < t.rows; i += 8) chunk_block(t, i, j);
}

}  // namespace mase::cpu
