// runtime/cpu/sgemm_avx512.cpp — the AVX-512 microkernel of the packed fp32 GEMM: a 12 × 32
// tile of C in 24 zmm registers, all of K. Compiled with -mavx512f (runtime/CMakeLists.txt),
// called only on CPUs with AVX-512. Read sgemm_tile.h first, then sgemm_avx2.cpp (the same
// tile at half the width, where the arithmetic is spelled out).
//
// Per k: 2 loads of B (the panel's 32 values), then for each of the 12 rows one broadcast of
// A[i][k] and 2 FMAs. 24 FMAs for 14 loads: a core with two 512-bit FMA units needs 12 cycles
// for the FMAs and its two load ports 7 for the loads, so the FMAs set the pace — the point of
// a register tile is exactly this ratio. 24 independent accumulators also hide the FMA's
// 4-cycle latency (two units × 4 cycles = 8 FMAs in flight at least).
//
// And one line the arithmetic does not show: a software prefetch of B kPrefetchK steps ahead.
// The driver's slice of a panel (KC × 32 floats, 128 KB) lives in L2, not L1, and the loads at
// the top of each k step waited for it: perf put ~40% of the kernel's samples on the first
// broadcasts after them. With the prefetch the line is in L1 when its step comes, and the driver
// could make its blocks larger (sgemm_packed.cpp: 0.64 → 0.98 of OpenBLAS on one thread;
// 0.57–0.60 → 0.93–0.97 at 4096³ on two, docs/performance.md).
#include <immintrin.h>

#include "runtime/cpu/sgemm_tile.h"
#include "runtime/cpu/tile_rows.h"

namespace mase::cpu {
namespace {

// 16 k steps = 2 KB of the panel ahead, ~200 cycles of FMAs: more than an L2 hit's latency
// (measured 8, 16, 24 and 32: 16 best by 1–3%)
constexpr int kPrefetchK = 16;

template <int MR>
void tile(const SgemmTile& t) {
  const int nv0 = t.nv < 16 ? t.nv : 16, nv1 = t.nv > 16 ? t.nv - 16 : 0;
  const __mmask16 m0 = nv0 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv0) - 1);
  const __mmask16 m1 = nv1 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv1) - 1);
  __m512 c[MR][2];  // 24 registers, as long as every loop over it is unrolled (sgemm_avx2.cpp)
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {  // continue the fma chain of the previous slice of K
    c[i][0] = t.load_c ? _mm512_maskz_loadu_ps(m0, t.c + i * t.ldc) : _mm512_setzero_ps();
    c[i][1] = t.load_c ? _mm512_maskz_loadu_ps(m1, t.c + i * t.ldc + 16) : _mm512_setzero_ps();
  }
  const float* b = t.b;
  const float* a = t.a;
  for (int64_t k = 0; k < t.K; ++k, b += 32, a += kSgemmAvx512MR) {
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchK * 32), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchK * 32 + 16), _MM_HINT_T0);
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      c[i][0] = _mm512_fmadd_ps(ai, b0, c[i][0]);
      c[i][1] = _mm512_fmadd_ps(ai, b1, c[i][1]);
    }
  }
  const __m512 bias0 = t.bias ? _mm512_maskz_loadu_ps(m0, t.bias) : _mm512_setzero_ps();
  const __m512 bias1 = t.bias ? _mm512_maskz_loadu_ps(m1, t.bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    __m512 v0 = c[i][0], v1 = c[i][1];
    if (t.bias) {
      v0 = _mm512_add_ps(v0, bias0);
      v1 = _mm512_add_ps(v1, bias1);
    }
    _mm512_mask_storeu_ps(t.c + i * t.ldc, m0, v0);
    _mm512_mask_storeu_ps(t.c + i * t.ldc + 16, m1, v1);
  }
}

}  // namespace

void sgemm_tile_avx512(const SgemmTile& t) {
  with_rows<12>(t.mr, [&](auto mr) { tile<decltype(mr)::value>(t); });
}

}  // namespace mase::cpu
