// runtime/cpu/bf16_gemm_avx512.cpp — the AVX512-BF16 microkernel of the bf16 GEMM: a 6 × 32
// tile of C in fp32, all of K, with vdpbf16ps. Compiled with -mavx512bf16
// (runtime/CMakeLists.txt) and called only on CPUs that have it (runtime/cpu/bf16.cpp): AMD
// Zen 4/5, Intel Cooper Lake and Sapphire Rapids; elsewhere its test says skipped. Read
// runtime/cpu/int8_gemm_vnni.cpp first: the same tile, for bf16 pairs.
//
// vdpbf16ps: in each of 16 fp32 lanes, acc += a0·b0 + a1·b1 for a pair of bf16 from each
// operand (32 bits per lane). B is packed as pairs of k per column (runtime/cpu/bf16.cpp):
// one 64-byte load gives 16 columns × 2 k-values; A's pair (k, k+1) of row i is broadcast.
#include <immintrin.h>

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

}  // namespace

void bf16_tile_avx512(const Bf16Tile& t) {
  with_rows<kBf16MR>(t.mr, [&](auto mr) { tile<decltype(mr)::value>(t); });
}

}  // namespace mase::cpu
