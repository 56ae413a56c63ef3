// runtime/cpu/sgemm_avx2.cpp — the AVX2 microkernel of the packed fp32 GEMM: a 6 × 16 tile
// of C in 12 ymm registers, all of K (BLIS's Haswell kernel shape). The fallback for CPUs
// without AVX-512 (AMD Zen 3, Intel client cores). Read sgemm_tile.h first.
//
// The arithmetic of a register tile. C's tile lives in registers for the whole K loop; per k
//   b0, b1 = B[k][0..7], B[k][8..15]           2 loads (the packed panel: contiguous)
//   for i in 0..5: a = broadcast A[i][k]        6 loads
//     c[i][0] += a·b0, c[i][1] += a·b1          12 FMAs
// 12 FMAs per 8 loads; 16 ymm registers = 12 accumulators + b0, b1 + a + 1 spare. Reading C
// once and B, A once per tile is what turns a memory-bound triple loop into a compute-bound
// one: each loaded B value is used 6 times, each A value 16 times.
#include <immintrin.h>

#include "runtime/cpu/sgemm_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

template <int MR>
void tile(const SgemmTile& t) {
  __m256 c[MR][2];
  for (int i = 0; i < MR; ++i) {  // continue the fma chain of the previous slice of K
    c[i][0] = c[i][1] = _mm256_setzero_ps();
    if (!t.load_c) continue;
    alignas(32) float in[16] = {};
    for (int j = 0; j < t.nv; ++j) in[j] = t.c[i * t.ldc + j];
    c[i][0] = _mm256_load_ps(in);
    c[i][1] = _mm256_load_ps(in + 8);
  }
  const float* b = t.b;
  const float* a = t.a;
  for (int64_t k = 0; k < t.K; ++k, b += 16, a += kSgemmAvx2MR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
      c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    float* ci = t.c + i * t.ldc;
    if (t.nv == 16) {  // a full tile: straight stores
      __m256 v0 = c[i][0], v1 = c[i][1];
      if (t.bias) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(t.bias));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(t.bias + 8));
      }
      _mm256_storeu_ps(ci, v0);
      _mm256_storeu_ps(ci + 8, v1);
    } else {  // the last panel: through a buffer
      alignas(32) float out[16];
      _mm256_store_ps(out, c[i][0]);
      _mm256_store_ps(out + 8, c[i][1]);
      for (int j = 0; j < t.nv; ++j) ci[j] = t.bias ? out[j] + t.bias[j] : out[j];
    }
  }
}

}  // namespace

void sgemm_tile_avx2(const SgemmTile& t) {
  with_rows<6>(t.mr, [&](auto mr) { tile<decltype(mr)::value>(t); });
}

}  // namespace mase::cpu
