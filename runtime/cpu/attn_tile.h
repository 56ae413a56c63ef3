// runtime/cpu/attn_tile.h — what the fused attention (sdpa.cpp) hands its own tile products
// (attn_tile_avx512.cpp, and its AVX2 twin attn_tile_avx2.cpp) and its AVX-512 softmax sweeps.
//
// Every product inside flash attention is small (a 64-row query tile against a 128-key tile,
// K = 64 or 128) and its operands already lie the way a GEMM microkernel wants them: one side
// is read an element at a time (a query row, a probability, broadcast to all lanes), the other
// a row of 16-float vectors at a time (a row of Kᵀ, of V, of dO). A library GEMM does not know
// that and packs both into its own panels on every call — a third of the forward's GEMM time
// with OpenBLAS (perf, docs/performance.md). attn_product_avx512 reads them in place: C (m × n)
// = alpha · A·B (+ C), where A is addressed with any two strides (so Pᵀ is P read down its
// columns: no transposed copy) and B row by row. It walks C in 6-row × 64-column register
// tiles, 24 zmm accumulators, the last ones masked. The AVX-512 file, like the other ISA files
// compiled beyond the baseline, includes only this header, tile_rows.h and <immintrin.h>
// (runtime/cpu/int8_tile.h says why); the AVX2 twin is compiled at the baseline.
#pragma once
#include <cstdint>

namespace mase::cpu {

struct AttnProduct {
  const float* a;      // a(r, k) = a[r·ars + k·aks], r < m, k < K
  int64_t ars, aks;
  const float* b;      // B(k, c) = b[k·ldb + c], c < n: each row contiguous
  int64_t ldb;
  float* c;            // C(r, c) = c[r·ldc + c]
  int64_t ldc;
  int64_t m, n, k;
  float alpha;
  bool accumulate;     // C = alpha·A·B + C; otherwise C = alpha·A·B
};

void attn_product_avx512(const AttnProduct& p);
// The same product on AVX2 (attn_tile_avx2.cpp: 6 × 16 tiles in ymm registers), same bits.
void attn_product_avx2(const AttnProduct& p);

// The online softmax's two sweeps over a score tile (rows × cols, row stride lds), in 16-lane
// registers, giving the same bits as rowwise.h's row_max and exp_shift_sum (same exp, same
// order of the sum):
//   attn_mask_max_avx512: row r += its mask row (mask + r·mask_ld, contiguous; null: none),
//                         max[r] = the row's max (NaN skipped, −inf for an empty row);
//   attn_exp_sum_avx512:  row r = exp(row r − shift[r]), below e^−87 flushed to 0, and
//                         sum[r] = its sum.
void attn_mask_max_avx512(float* s, int64_t lds, int64_t rows, int64_t cols, const float* mask,
                          int64_t mask_ld, float* max);
void attn_exp_sum_avx512(float* s, int64_t lds, int64_t rows, int64_t cols, const float* shift,
                         float* sum);

// The backward's sweep over a recomputed tile (sdpa.cpp: P = exp(S − m)/l, dS = P ∘ (dP − D)),
// rows × cols with row stride ld for every array. Per row r, given its forward statistics m[r]
// and inv_l[r] = 1/l (0 for a row that attends to nothing: P = 0, dS = 0) and D[r]:
//   p  = exp(s + mask − m)·inv_l   (s: the scores, mask as in attn_mask_max_avx512)
//   z  the dropout multipliers (null: no dropout), then
//   pd = z∘p (only with z)   and   dp = p∘(z∘dp − D)
// written over s (p), pd and dp. The operations of sdpa.cpp's row-by-row loop; whether the
// compiler fused its z∘dp − D into one FMA there decides whether the last bit of dS agrees.
// A row with inv_l = 0 comes out as garbage (exp(s + ∞)·0 can be NaN): the caller zeroes it.
struct AttnGradRows {
  float* p;            // scores in, P out
  float* dp;           // dO·Vᵀ in, dS out
  float* pd;           // z∘P out (with dropout)
  const float* z;      // dropout multipliers, or null
  const float* mask;   // as attn_mask_max_avx512, or null
  int64_t mask_ld;
  int64_t ld, rows, cols;
  const float *m, *inv_l, *d;
};
void attn_grad_rows_avx512(const AttnGradRows& g);

}  // namespace mase::cpu
