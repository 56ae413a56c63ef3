// runtime/cpu/attn_tile_avx2.cpp — attn_product_avx512's twin for CPUs without AVX-512 (AMD
// Zen 3, Intel client cores): the same packing-free product (attn_tile.h), on ymm registers.
// Compiled at the build's baseline (x86-64-v3), so it needs no flags of its own.
//
// One register tile: MR ≤ 6 rows × 2 vectors of 8 columns, 12 accumulators — 16 ymm registers
// hold those, two of B and one broadcast (sgemm_avx2.cpp's shape, BLIS's Haswell kernel). Per
// k: 2 loads of B, 6 broadcasts, 12 FMAs. Columns past the last full 16 go through a small
// buffer (AVX2 has no masked FMA; vmaskmov would do, but one zero-padded copy is plainer).
// The arithmetic is attn_product_avx512's exactly (one fma chain per element over k, then
// alpha·sum, + C by one more fma): the two give the same bits (tests/runtime/test_attn_tile.cpp).
#include <immintrin.h>

#include <vector>

#include "runtime/cpu/attn_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

constexpr int kMR = 6;

// C block (MR × 16, only `cols` ≤ 16 of them valid): B's rows are read through `b` with
// stride ldb when cols == 16, or from `bpad` (K rows of 16, zero-padded) otherwise.
template <int MR>
void tile(const AttnProduct& p, const float* a, const float* b, int64_t ldb, float* c,
          int cols) {
  const int64_t K = p.k, aks = p.aks, ars = p.ars;
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k, b += ldb, a += aks) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i * ars);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  const __m256 alpha = _mm256_set1_ps(p.alpha);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * p.ldc;
    // C's row is read and written in place, or through a buffer when fewer than 16 columns
    alignas(32) float buf[16];
    float* io = ci;
    if (cols < 16) {
      for (int j = 0; j < 16; ++j) buf[j] = j < cols && p.accumulate ? ci[j] : 0.0f;
      io = buf;
    }
    const __m256 x0 = p.accumulate ? _mm256_fmadd_ps(alpha, acc[i][0], _mm256_loadu_ps(io))
                                   : _mm256_mul_ps(alpha, acc[i][0]);
    const __m256 x1 = p.accumulate ? _mm256_fmadd_ps(alpha, acc[i][1], _mm256_loadu_ps(io + 8))
                                   : _mm256_mul_ps(alpha, acc[i][1]);
    _mm256_storeu_ps(io, x0);
    _mm256_storeu_ps(io + 8, x1);
    if (io == buf)
      for (int j = 0; j < cols; ++j) ci[j] = buf[j];
  }
}

}  // namespace

void attn_product_avx2(const AttnProduct& p) {
  for (int64_t c0 = 0; c0 < p.n; c0 += 16) {
    const int cols = static_cast<int>(p.n - c0 < 16 ? p.n - c0 : 16);
    const float* b = p.b + c0;
    int64_t ldb = p.ldb;
    // a ragged last block: B's columns copied into rows of 16, zero-padded (K is a few hundred
    // at most in attention; the buffer is kept per thread)
    thread_local std::vector<float> pad;
    if (cols < 16) {
      pad.assign(static_cast<size_t>(p.k) * 16 + 16, 0.0f);
      for (int64_t k = 0; k < p.k; ++k)
        for (int j = 0; j < cols; ++j) pad[static_cast<size_t>(k * 16 + j)] = b[k * p.ldb + j];
      b = pad.data();
      ldb = 16;
    }
    for (int64_t r0 = 0; r0 < p.m; r0 += kMR) {
      const int mr = static_cast<int>(p.m - r0 < kMR ? p.m - r0 : kMR);
      with_rows<kMR>(mr, [&](auto rows) {
        tile<decltype(rows)::value>(p, p.a + r0 * p.ars, b, ldb, p.c + r0 * p.ldc + c0, cols);
      });
    }
  }
}

}  // namespace mase::cpu
