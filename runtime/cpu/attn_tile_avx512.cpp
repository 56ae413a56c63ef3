// runtime/cpu/attn_tile_avx512.cpp — the fused attention's tile products on AVX-512, no packing
// (attn_tile.h says why there is nothing to pack). Compiled with -mavx512f (runtime/
// CMakeLists.txt), called only on CPUs with AVX-512.
//
// One register tile: MR ≤ 6 rows × NV ≤ 4 vectors of 16 columns. Per k: NV loads of B's row k,
// then for each row one broadcast of a(r, k) and NV FMAs — 24 FMAs for 10 loads at full size,
// so the two FMA units, not the two load ports, set the pace (sgemm_avx512.cpp does the same
// count for its 12 × 32 tile). Ragged edges: fewer rows is a smaller MR instance, fewer columns
// a mask on the last vector (masked loads never touch the memory past the row's end).
#include <immintrin.h>

#include "runtime/cpu/attn_tile.h"
#include "runtime/cpu/tile_rows.h"

// GCC 12 warns that _mm512_max_ps's own _mm512_undefined_ps() "may be used uninitialized": a
// known false positive of the intrinsic header (int8_gemm_vnni.cpp has the same line).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mase::cpu {
namespace {

constexpr int kMR = 6, kNV = 4;

template <int MR, int NV>
void tile(const AttnProduct& p, const float* a, const float* b, float* c, __mmask16 last) {
  // acc stays in 24 registers only if every loop that indexes it is unrolled (the pragmas):
  // with the zeroing and the store loops left rolled, GCC 12 kept acc as an array in memory
  // and stored all 24 vectors at every k — the forward ran at 38 ms instead of 21 (T 256).
  const int64_t K = p.k, ldb = p.ldb, aks = p.aks, ars = p.ars;
  __m512 acc[MR][NV];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k, b += ldb, a += aks) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      bv[v] = v + 1 < NV ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(last, b + 16 * v);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(p.alpha);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * p.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v + 1 < NV ? __mmask16(0xFFFF) : last;
      const __m512 x = p.accumulate
                           ? _mm512_fmadd_ps(alpha, acc[i][v], _mm512_maskz_loadu_ps(m, ci + 16 * v))
                           : _mm512_mul_ps(alpha, acc[i][v]);
      _mm512_mask_storeu_ps(ci + 16 * v, m, x);
    }
  }
}

template <int NV>
void column_block(const AttnProduct& p, int64_t c0, int64_t cols) {
  const int rem = static_cast<int>(cols - 16 * (NV - 1));  // 1..16 columns in the last vector
  const __mmask16 last = rem == 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1);
  for (int64_t r0 = 0; r0 < p.m; r0 += kMR) {  // B's block stays in L1 across the row strips
    const int mr = static_cast<int>(p.m - r0 < kMR ? p.m - r0 : kMR);
    with_rows<kMR>(mr, [&](auto rows) {
      tile<decltype(rows)::value, NV>(p, p.a + r0 * p.ars, p.b + c0, p.c + r0 * p.ldc + c0, last);
    });
  }
}

// e^x for 16 lanes, the arithmetic of fast_math.h's exp_f32_flush step for step (that header
// cannot be included here: its functions are inline with external linkage): n = round(x/ln 2),
// r = x − n·ln 2 in two steps, e^r = 1 + r + r²·P(r), then ·2^n (vscalefps: exact for the
// normal results this range gives); x < −87 gives 0, NaN stays NaN.
inline __m512 exp_flush(__m512 x) {
  const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);  // NaN x: x
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), xc);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 er = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512 y = _mm512_scalef_ps(er, n);
  return _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ), y);
}

inline __mmask16 tail_mask(int64_t n) { return __mmask16((1u << n) - 1); }  // n < 16

}  // namespace

void attn_mask_max_avx512(float* s, int64_t lds, int64_t rows, int64_t cols, const float* mask,
                          int64_t mask_ld, float* max) {
  const int64_t c16 = cols - cols % 16;
  const __mmask16 tail = tail_mask(cols % 16);
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  for (int64_t r = 0; r < rows; ++r) {
    float* x = s + r * lds;
    const float* mk = mask ? mask + r * mask_ld : nullptr;
    __m512 m = ninf;
    for (int64_t j = 0; j < c16; j += 16) {
      __m512 v = _mm512_loadu_ps(x + j);
      if (mk) {
        v = _mm512_add_ps(v, _mm512_loadu_ps(mk + j));
        _mm512_storeu_ps(x + j, v);
      }
      m = _mm512_max_ps(v, m);  // v NaN: m (NaN is skipped, as std::max(m, NaN) = m)
    }
    if (tail) {
      __m512 v = _mm512_mask_loadu_ps(ninf, tail, x + c16);
      if (mk) {
        v = _mm512_add_ps(v, _mm512_mask_loadu_ps(ninf, tail, mk + c16));
        _mm512_mask_storeu_ps(x + c16, tail, v);
      }
      m = _mm512_max_ps(v, m);
    }
    max[r] = _mm512_reduce_max_ps(m);
  }
}

void attn_exp_sum_avx512(float* s, int64_t lds, int64_t rows, int64_t cols, const float* shift,
                         float* sum) {
  const int64_t c16 = cols - cols % 16;
  const __mmask16 tail = tail_mask(cols % 16);
  for (int64_t r = 0; r < rows; ++r) {
    float* x = s + r * lds;
    const __m512 sh = _mm512_set1_ps(shift[r]);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < c16; j += 16) {
      const __m512 y = exp_flush(_mm512_sub_ps(_mm512_loadu_ps(x + j), sh));
      _mm512_storeu_ps(x + j, y);
      acc = _mm512_add_ps(acc, y);
    }
    // exp_shift_sum's order: its two 8-lane sums added, then their lanes one by one, then
    // the tail's elements one by one.
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(_mm512_castps512_ps256(acc),
                                         _mm512_extractf32x8_ps(acc, 1)));
    float t = 0;
    for (float lane : lanes) t += lane;
    if (tail) {
      const __m512 y = exp_flush(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + c16), sh));
      _mm512_mask_storeu_ps(x + c16, tail, y);
      for (int64_t j = c16; j < cols; ++j) t += x[j];
    }
    sum[r] = t;
  }
}

void attn_grad_rows_avx512(const AttnGradRows& g) {
  const int64_t cols = g.cols;
  for (int64_t r = 0; r < g.rows; ++r) {
    const int64_t o = r * g.ld;
    const float* mk = g.mask ? g.mask + r * g.mask_ld : nullptr;
    const float* z = g.z ? g.z + o : nullptr;
    const __m512 m = _mm512_set1_ps(g.m[r]), inv_l = _mm512_set1_ps(g.inv_l[r]);
    const __m512 d = _mm512_set1_ps(g.d[r]);
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 k = cols - j >= 16 ? __mmask16(0xFFFF) : tail_mask(cols - j);
      __m512 s = _mm512_maskz_loadu_ps(k, g.p + o + j);
      if (mk) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(k, mk + j));
      const __m512 p = _mm512_mul_ps(exp_flush(_mm512_sub_ps(s, m)), inv_l);
      __m512 dp = _mm512_maskz_loadu_ps(k, g.dp + o + j);
      if (z) {
        const __m512 zz = _mm512_maskz_loadu_ps(k, z + j);
        _mm512_mask_storeu_ps(g.pd + o + j, k, _mm512_mul_ps(p, zz));
        dp = _mm512_mul_ps(dp, zz);
      }
      _mm512_mask_storeu_ps(g.p + o + j, k, p);
      _mm512_mask_storeu_ps(g.dp + o + j, k, _mm512_mul_ps(p, _mm512_sub_ps(dp, d)));
    }
  }
}

void attn_product_avx512(const AttnProduct& p) {
  for (int64_t c0 = 0; c0 < p.n; c0 += 16 * kNV) {
    const int64_t cols = p.n - c0 < 16 * kNV ? p.n - c0 : 16 * kNV;
    switch ((cols + 15) / 16) {
      case 1: column_block<1>(p, c0, cols); break;
      case 2: column_block<2>(p, c0, cols); break;
      case 3: column_block<3>(p, c0, cols); break;
      default: column_block<4>(p, c0, cols); break;
    }
  }
}

}  // namespace mase::cpu
