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
// The panel is prefetched kPrefetchK steps ahead, as in the AVX-512 kernel (which says why).
#include <immintrin.h>

#include "runtime/cpu/sgemm_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

constexpr int kPrefetchK = 16;  // 1 KB of the panel ahead (one 64-byte line per k)

// The lanes j < n of an 8-float vector (n ≤ 0: none, n ≥ 8: all), for maskload/maskstore.
__m256i lanes_below(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Every loop over c[][] is unrolled (the pragmas): the array then lives in 12 registers. With
// one loop left rolled, GCC 12 kept it on the stack and stored each accumulator after each
// FMA — 12 stores per k on one store port, twice the FMAs' 6 cycles: the kernel ran at 0.37
// of the AVX2 peak at 4096³, 0.79 after (the ladder capped to AVX2, docs/performance.md).
template <int MR>
void tile(const SgemmTile& t) {
  const __m256i m0 = lanes_below(t.nv), m1 = lanes_below(t.nv - 8);
  __m256 c[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {  // continue the fma chain of the previous slice of K
    c[i][0] = t.load_c ? _mm256_maskload_ps(t.c + i * t.ldc, m0) : _mm256_setzero_ps();
    c[i][1] = t.load_c ? _mm256_maskload_ps(t.c + i * t.ldc + 8, m1) : _mm256_setzero_ps();
  }
  const float* b = t.b;
  const float* a = t.a;
  for (int64_t k = 0; k < t.K; ++k, b += 16, a += kSgemmAvx2MR) {
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchK * 16), _MM_HINT_T0);
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
      c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
    }
  }
  const __m256 bias0 = t.bias ? _mm256_maskload_ps(t.bias, m0) : _mm256_setzero_ps();
  const __m256 bias1 = t.bias ? _mm256_maskload_ps(t.bias + 8, m1) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    __m256 v0 = c[i][0], v1 = c[i][1];
    if (t.bias) {
      v0 = _mm256_add_ps(v0, bias0);
      v1 = _mm256_add_ps(v1, bias1);
    }
    _mm256_maskstore_ps(t.c + i * t.ldc, m0, v0);
    _mm256_maskstore_ps(t.c + i * t.ldc + 8, m1, v1);
  }
}

}  // namespace

void sgemm_tile_avx2(const SgemmTile& t) {
  with_rows<6>(t.mr, [&](auto mr) { tile<decltype(mr)::value>(t); });
}

}  // namespace mase::cpu
