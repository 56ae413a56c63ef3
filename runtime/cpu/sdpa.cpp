// runtime/cpu/sdpa.cpp — fused attention kernels (see sdpa.h; the op: autograd/ops/sdpa.cpp).
//
// Forward (FlashAttention, Dao et al. 2022, §3.1; the online softmax of Milakov & Gimelshein
// 2018). For each (b, h) and each tile of kBr query rows, walk the keys in tiles of kBc:
//   S   = scale·Q_i·K_jᵀ + mask_j                     (kBr × kBc, in a per-thread buffer)
//   m'  = max(m, rowmax S)      c = exp(m − m')        running max, and how much it rose
//   P   = exp(S − m')           l = l·c + rowsum P     running sum of the un-dropped P
//   O   = O·c + (z ∘ P)·V_j                            z: the dropout mask (1 without dropout)
// then O /= l, and (m, l) are kept per row (2·B·NH·Tq numbers) for the backward. The scores
// of a row exist only one tile at a time; the full (B, NH, T, T) never does.
//
// Backward (FlashAttention-2, Dao 2023, Algorithm 2), for each (b, h): D_i = dO_i·O_i, then
// for each key tile j and each query tile i, recompute P from (m, l) instead of storing it:
//   P   = exp(scale·Q_i·K_jᵀ + mask − m) / l     dP = z ∘ (dO_i·V_jᵀ)     dS = P ∘ (dP − D)
//   dV_j += (z ∘ P)ᵀ·dO_i     dQ_i += scale·dS·K_j     dK_j += scale·dSᵀ·Q_i
// (Σ_j P_ij·dP_ij = dO_i·O_i = D_i, dropout included, which is what makes the row sum free.)
// FlashAttention keeps the one number lse = m + log l per row; we keep m and l, because with
// HF's finite mask a fully padded row has m ≈ −3.4e38, where m + log l rounds back to m and
// exp(S − lse) would give P = 1 instead of 1/Tk (the reference's gradient would disagree).
// Recomputing costs one more GEMM (7 per tile pair for forward + backward instead of 6) and
// the exps again, but keeping P would be the (B, NH, T, T) tensor that this kernel exists to
// avoid; per tile it is cheaper to redo than to store and re-read (docs/performance.md).
//
// Inner products, three ways (product() below). On a CPU with AVX-512 (f32), our own register
// tile, attn_product_avx512 (attn_tile.h): the operands of these products already lie as a
// GEMM microkernel wants them (one side broadcast an element at a time, the other read in rows
// of 16-float vectors), so nothing is packed — OpenBLAS repacks both operands of every tile
// product, a third of its time here (perf). The softmax sweeps of each tile then run in 16-lane
// registers too (attn_mask_max / attn_exp_sum / attn_grad_rows_avx512), and the B operands
// K, V, Q, dO are first copied per head into contiguous rows (head_rows: read in place their
// 2 KB stride thrashes L1). Measured at B 16, NH 8, HS 64, T 256 on 2 Xeon (Cascade Lake)
// cores: forward 23.7 → 15.9 ms, forward + backward 67.6 → 54.0 (docs/performance.md). On an
// AVX2 CPU the same products run on the AVX2 twin of the tile, attn_product_avx2 (6 × 16 in
// ymm registers; the softmax sweeps stay the row-by-row loops below): 1.03–1.15× OpenBLAS's
// tile products on the same Xeon capped to AVX2 (MASE_MAX_CPU_ISA=avx2). f64 (the gradient
// checks) makes each tile product one serial OpenBLAS call (dgemm, any strides and
// transposes), from inside TBB tasks with OpenBLAS set to 1 thread for the duration of the
// kernel (SerialBlas, runtime/parallel.h: two pools never nest). On every path K and V are
// first copied transposed, one head at a time (transpose_head): Q·Kᵀ and dO·Vᵀ then run as
// plain products, which OpenBLAS does faster (6% of the forward + backward at T = 256) and our
// tiles need (their B is read in rows).
// Parallelism: forward over (b, h, query tile) — enough tasks even for B·NH = 1; backward over
// (b, h), each task owning its rows of dq, dk, dv (no atomics, no reduction afterwards).
//
// Fully masked rows: with HF's finite mask (finfo.min) the scores stay finite and the row
// attends uniformly, exactly as the reference; with −inf everywhere, the max is −inf, the
// exps are taken against 0 instead (exp(−inf) = 0, never −inf − (−inf) = NaN), l stays 0, the
// output row is 0, (m, l) = (−inf, 0), and backward gives P = 0 there: no NaN anywhere.
#include "runtime/kernels/sdpa.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#ifdef __AVX__
#include <immintrin.h>
#endif

#include "runtime/cpu/attn_tile.h"
#include "runtime/cpu/philox_x32.h"
#include "runtime/cpu/sdpa_amx.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/cpu/rowwise.h"
#include "runtime/cpu_features.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// Tile sizes, measured on the 2-core machine (docs/performance.md): kBc = 128 keys keeps the
// score tile (kBr·kBc floats = 32 KB) in L1/L2 beside the K and V tiles; kBr = 64 queries
// makes each GEMM big enough (64×128×64) for OpenBLAS to run near its peak.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 128;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Who computes the f32 tile products: our AVX-512 tile, our AVX2 tile (attn_tile.h), or
// serial OpenBLAS calls (a CPU without AVX2/FMA; f64 always).
enum class TilePath { blas, avx2, avx512 };

// The best path this CPU has (MASE_MAX_CPU_ISA caps it like every other kernel).
inline TilePath tile_path() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512()) return TilePath::avx512;
  return f.avx2 && f.fma ? TilePath::avx2 : TilePath::blas;
}

// C (M × N) = alpha·op(A)·B + beta·C with beta 0 or 1, B never transposed: every tile product
// of this file. op(A) = Aᵀ reads A down its columns (our tiles take any two strides for A).
// --precision bf16 reaches the products only on a CPU with bf16 units (sdpa_amx.h, forward and
// backward: operands rounded to bf16, as PyTorch's flash attention under autocast; AMX-BF16
// tiles, or AVX512-BF16's vdpbf16ps); elsewhere our tiles compute in fp32 (the BLAS path, which
// would round, runs only for f64).
template <class T>
void product(TilePath path, bool trans_a, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
             int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (path != TilePath::blas) {
      const AttnProduct p{A, trans_a ? 1 : lda, trans_a ? lda : 1, B, ldb, C, ldc, M, N, K,
                          alpha, beta != T(0)};
      if (path == TilePath::avx512) attn_product_avx512(p);
      else attn_product_avx2(p);
      return;
    }
  }
  gemm<T>(trans_a, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Row stride of the transposed heads Kᵀ, Vᵀ (HS rows of Tk keys): one cache line more than Tk,
// so that at T = 256 or 512 (rows 1 or 2 KB apart) the rows a tile product reads do not share
// a few L1 sets (head_rows below says the same of the other operands). Measured on the AVX-512
// path at T 512: forward 66 → 60 ms, forward + backward 227 → 208 (B 16, NH 8).
inline int64_t transposed_ld(int64_t Tk) { return Tk + 16; }

// One head's rows of K, V, Q or dO as a tile product reads them as its B operand: in place
// (row stride st), or copied into a contiguous (rows × width) buffer when `copy`. Our tiles
// (both ISAs) copy: read in place, rows 2 KB apart (B·T·C layout, C = 512) fall into a few of L1's
// 64 sets and evict each other, which OpenBLAS never sees because it packs its operands; one
// copy per head (Tk × 64 floats) made the forward 8% faster and the backward 4% (T = 256).
template <class T>
struct HeadRows {
  const T* data;
  int64_t ld;
  const T* row(int64_t t) const { return data + t * ld; }
};
template <class T>
HeadRows<T> head_rows(bool copy, T* buffer, const HeadsView<const T>& x, int64_t b, int64_t h,
                      int64_t rows, int64_t width) {
  if (!copy) return {x.row(b, h, 0), x.st};
  for (int64_t t = 0; t < rows; ++t) std::copy(x.row(b, h, t), x.row(b, h, t) + width, buffer + t * width);
  return {buffer, width};
}

#ifdef __AVX__
// dst[c·ld + r] = src[r·ls + c] for an 8×8 block of floats: rows are interleaved in pairs
// (unpack), then in fours (shuffle), then the 128-bit halves are exchanged (permute).
inline void transpose8x8(float* dst, int64_t ld, const float* src, int64_t ls) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ls);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// A per-thread buffer of at least n elements; `slot` tells the kernel's buffers apart. It is
// kept between calls, so a training step does not allocate.
template <class T>
T* scratch(int slot, int64_t n) {
  thread_local std::vector<T> buffers[10];
  std::vector<T>& b = buffers[slot];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

// xt[d·ld + j] = x[j·st + d] for j < rows, d < width: one head's K (or V) transposed, so
// that the tile products S = Q_i·K_jᵀ and dP = dO_i·V_jᵀ read it as a plain operand. OpenBLAS
// runs a product whose B is transposed (NT) ~20% slower than the same product with B packed
// (NN) at these shapes (64×128×64, one thread: 82 against 101 GFLOP/s, measured), and one
// transposed copy of a head serves all its query tiles. f32 goes by 8×8 blocks in AVX
// registers (unpack, shuffle, permute: a quarter of the time of the plain loop).
template <class T>
void transpose_head(T* xt, int64_t ld, const T* x, int64_t st, int64_t rows, int64_t width) {
  int64_t j0 = 0;
#ifdef __AVX__
  if constexpr (std::is_same_v<T, float>) {
    const int64_t w8 = width - width % 8;
    for (; j0 + 8 <= rows; j0 += 8) {
      for (int64_t d = 0; d < w8; d += 8) transpose8x8(xt + d * ld + j0, ld, x + j0 * st + d, st);
      for (int64_t j = j0; j < j0 + 8; ++j)
        for (int64_t d = w8; d < width; ++d) xt[d * ld + j] = x[j * st + d];
    }
  }
#endif
  for (int64_t j = j0; j < rows; ++j)
    for (int64_t d = 0; d < width; ++d) xt[d * ld + j] = x[j * st + d];
}

// s[j] += mask(b, h, i, j0 + j) for j < n.
template <class T>
void add_mask_row(T* s, const MaskView<T>& m, int64_t b, int64_t h, int64_t i, int64_t j0,
                  int64_t n) {
  const T* row = m.data + b * m.sb + h * m.sh + i * m.si + j0 * m.sj;
  if (m.sj == 1) {
    for (int64_t j = 0; j < n; ++j) s[j] += row[j];
  } else {
    for (int64_t j = 0; j < n; ++j) s[j] += row[j * m.sj];
  }
}

template <class T>
void scale_row(T* x, T f, int64_t n) {
  for (int64_t d = 0; d < n; ++d) x[d] *= f;
}

// The two sweeps of the online softmax over a score tile S (rows × cols, row stride kBc) of
// head (b, h), query rows i0.., keys j0..: S += mask and tmax[r] = max of row r; then
// S = exp(S − shift[r]) and tsum[r] = Σ row r. On AVX-512 (f32, a mask contiguous along
// keys or none) in 16-lane registers (attn_tile.h), otherwise row by row; the same bits.
template <class T>
void tile_mask_max(bool x512, T* S, int64_t rows, int64_t cols, const MaskView<T>& mask,
                   int64_t b, int64_t h, int64_t i0, int64_t j0, T* tmax) {
  if constexpr (std::is_same_v<T, float>) {
    if (x512 && (!mask.data || mask.sj == 1)) {
      const float* mk =
          mask.data ? mask.data + b * mask.sb + h * mask.sh + i0 * mask.si + j0 : nullptr;
      attn_mask_max_avx512(S, kBc, rows, cols, mk, mask.si, tmax);
      return;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* s = S + r * kBc;
    if (mask.data) add_mask_row(s, mask, b, h, i0 + r, j0, cols);
    tmax[r] = row_max(s, cols);
  }
}

template <class T>
void tile_exp_sum(bool x512, T* S, int64_t rows, int64_t cols, const T* shift, T* tsum) {
  if constexpr (std::is_same_v<T, float>) {
    if (x512) return attn_exp_sum_avx512(S, kBc, rows, cols, shift, tsum);
  }
  for (int64_t r = 0; r < rows; ++r)
    tsum[r] = exp_shift_sum(S + r * kBc, S + r * kBc, shift[r], cols);
}

// The backward's sweep over one recomputed tile (rows × cols, row stride kBc): P = exp(S +
// mask − m)/l from the forward's (m, l) per row (st: m, l interleaved), then with dropout
// z∘P (for dV), and dS = P ∘ (z∘dP − D) over dP. Query row `row0` (over all heads) draws
// row drop.rows(row0) of the dropout stream, from word drop.rows(row0)·Tk + j0. On AVX-512
// (f32, contiguous mask or none) in 16-lane registers (attn_tile.h), the multipliers of the
// whole tile drawn first; otherwise row by row.
template <class T>
void grad_tile(bool x512, T* P, T* dP, T* Pd, T* z, int64_t rows, int64_t cols,
               const MaskView<T>& mask, int64_t b, int64_t h, int64_t i0, int64_t j0, const T* st,
               const T* D, int64_t row0, int64_t Tk, const DropoutMask& drop) {
  if constexpr (std::is_same_v<T, float>) {
    if (x512 && (!mask.data || mask.sj == 1)) {
      float m[kBr], inv_l[kBr];
      for (int64_t r = 0; r < rows; ++r) {
        m[r] = st[2 * r];
        inv_l[r] = st[2 * r + 1] == 0.0f ? 0.0f : 1.0f / st[2 * r + 1];
        if (drop.on) dropout_factors(z + r * kBc, drop.rows(row0 + r) * Tk + j0, cols, drop);
      }
      const float* mk =
          mask.data ? mask.data + b * mask.sb + h * mask.sh + i0 * mask.si + j0 : nullptr;
      attn_grad_rows_avx512({P, dP, Pd, drop.on ? z : nullptr, mk, mask.si, kBc, rows, cols, m,
                             inv_l, D});
      for (int64_t r = 0; r < rows; ++r)
        if (st[2 * r + 1] == 0.0f) {  // a row attending to nothing: P = 0, dS = 0
          std::fill(P + r * kBc, P + r * kBc + cols, 0.0f);
          std::fill(dP + r * kBc, dP + r * kBc + cols, 0.0f);
          if (drop.on) std::fill(Pd + r * kBc, Pd + r * kBc + cols, 0.0f);
        }
      return;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    T *p = P + r * kBc, *dp = dP + r * kBc;
    const T m_r = st[2 * r], l_r = st[2 * r + 1], d_r = D[r];
    if (mask.data) add_mask_row(p, mask, b, h, i0 + r, j0, cols);
    if (l_r == T(0)) {  // a row attending to nothing: P = 0, dS = 0
      std::fill(p, p + cols, T(0));
      std::fill(dp, dp + cols, T(0));
      if (drop.on) std::fill(Pd + r * kBc, Pd + r * kBc + cols, T(0));
      continue;
    }
    const T inv_l = T(1) / l_r;
    if (!drop.on) {  // P = exp(S − m) / l and dS = P ∘ (dP − D) in one pass
      for (int64_t j = 0; j < cols; ++j) {
        p[j] = exp_flush_of(p[j] - m_r) * inv_l;
        dp[j] = p[j] * (dp[j] - d_r);
      }
      continue;
    }
    T* pd = Pd + r * kBc;  // with dropout: z ∘ P for dV, z ∘ dP inside dS
    dropout_factors(z, drop.rows(row0 + r) * Tk + j0, cols, drop);
    for (int64_t j = 0; j < cols; ++j) {
      p[j] = exp_flush_of(p[j] - m_r) * inv_l;
      pd[j] = p[j] * z[j];
      dp[j] = p[j] * (dp[j] * z[j] - d_r);
    }
  }
}

// Rows 0 .. rows − 1 of head (b, h) set to 0 (the gradient of an empty side).
template <class T>
void zero_rows(const HeadsView<T>& x, int64_t b, int64_t h, int64_t rows, int64_t width) {
  for (int64_t t = 0; t < rows; ++t) std::fill(x.row(b, h, t), x.row(b, h, t) + width, T(0));
}

}  // namespace

template <class T>
void sdpa_forward(HeadsView<T> out, T* stats, HeadsView<const T> q, HeadsView<const T> k,
                  HeadsView<const T> v, MaskView<T> mask, const SdpaSizes& n, T scale,
                  const DropoutMask& drop) {
  const int64_t q_tiles = (n.Tq + kBr - 1) / kBr;
  const TilePath path = std::is_same_v<T, float> ? tile_path() : TilePath::blas;
  const bool x512 = path == TilePath::avx512, own = path != TilePath::blas;
  const int64_t ldt = transposed_ld(n.Tk);
  // --precision bf16 on a CPU with bf16 units: both products on bf16 operands (sdpa_amx.h)
  const bool bf16 = std::is_same_v<T, float> && bf16_attention_tiles();
  SerialBlas serial;
  parallel_for(0, n.B * n.NH * q_tiles, 1, [&](int64_t lo, int64_t hi) {
    thread_local AmxAttention tiles;
    T* S = scratch<T>(0, kBr * kBc);    // scores, then probabilities, of one tile
    T* z = scratch<T>(1, kBc);          // dropout multipliers of one row of the tile
    T* KT = scratch<T>(2, n.HS * ldt);  // Kᵀ of head bh_t, (HS, Tk), row stride ldt
    T* Vbuf = own ? scratch<T>(3, n.HSv * n.Tk) : nullptr;
    HeadRows<T> V{};  // V of head bh_t
    int64_t bh_t = -1;
    T m[kBr], l[kBr];                   // running max and sum per query row
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t bh = u / q_tiles, b = bh / n.NH, h = bh % n.NH;
      const int64_t i0 = (u % q_tiles) * kBr, rows = std::min(kBr, n.Tq - i0);
      if (bh != bh_t) {  // a task's units are consecutive: each head is transposed once per task
        if constexpr (std::is_same_v<T, float>) {
          if (bf16) tiles.pack_head(k.row(b, h, 0), k.st, v.row(b, h, 0), v.st, n.Tk, n.HS, n.HSv);
        }
        if (!bf16) {
          transpose_head(KT, ldt, k.row(b, h, 0), k.st, n.Tk, n.HS);
          V = head_rows(own, Vbuf, v, b, h, n.Tk, n.HSv);
        }
        bh_t = bh;
      }
      if constexpr (std::is_same_v<T, float>) {
        if (bf16) tiles.pack_queries(q.row(b, h, i0), q.st, rows);
      }
      T* o = out.row(b, h, i0);  // O accumulates in place in the output
      std::fill(m, m + rows, kNegInf<T>);
      std::fill(l, l + rows, T(0));
      for (int64_t j0 = 0; j0 < n.Tk; j0 += kBc) {
        const int64_t cols = std::min(kBc, n.Tk - j0);
        // S = scale·Q_i·K_jᵀ (columns j0 .. j0 + cols of Kᵀ)
        if constexpr (std::is_same_v<T, float>) {
          if (bf16) tiles.scores(S, kBc, j0, cols, scale);
        }
        if (!bf16)
          product<T>(path, false, rows, cols, n.HS, scale, q.row(b, h, i0), q.st, KT + j0, ldt,
                     T(0), S, kBc);
        // The online softmax: each row's max, then its exps and their sum (two sweeps of the
        // tile), then each row's running (m, l) and O brought to the new max.
        T tmax[kBr], shift[kBr], c[kBr], tsum[kBr];
        tile_mask_max(x512, S, rows, cols, mask, b, h, i0, j0, tmax);
        for (int64_t r = 0; r < rows; ++r) {
          const T m_new = std::max(m[r], tmax[r]);
          shift[r] = m_new == kNegInf<T> ? T(0) : m_new;  // all −inf so far: exps are 0
          c[r] = exp_of(m[r] - shift[r]);                  // m = −inf: c = 0
          m[r] = m_new;
        }
        tile_exp_sum(x512, S, rows, cols, shift, tsum);  // S = P (un-dropped)
        for (int64_t r = 0; r < rows; ++r) {
          l[r] = l[r] * c[r] + tsum[r];
          if (j0 > 0 && c[r] != T(1)) scale_row(o + r * out.st, c[r], n.HSv);
          if (drop.on) {
            T* s = S + r * kBc;
            dropout_factors(z, drop.rows(bh * n.Tq + i0 + r) * n.Tk + j0, cols, drop);
            for (int64_t j = 0; j < cols; ++j) s[j] *= z[j];
          }
        }
        // O = O·c + P·V_j (the first tile overwrites: beta = 0)
        if constexpr (std::is_same_v<T, float>) {
          if (bf16) tiles.values(o, out.st, S, kBc, j0, cols, j0 > 0);
        }
        if (!bf16)
          product<T>(path, false, rows, n.HSv, cols, T(1), S, kBc, V.row(j0), V.ld,
                     j0 == 0 ? T(0) : T(1), o, out.st);
      }
      for (int64_t r = 0; r < rows; ++r) {
        T* orow = o + r * out.st;
        if (l[r] > T(0)) scale_row(orow, T(1) / l[r], n.HSv);
        else std::fill(orow, orow + n.HSv, T(0));  // all scores −inf, or no keys: attends to none
        stats[2 * (bh * n.Tq + i0 + r)] = m[r];
        stats[2 * (bh * n.Tq + i0 + r) + 1] = l[r];
      }
    }
  });
}

template <class T>
void sdpa_backward(HeadsView<T> dq, HeadsView<T> dk, HeadsView<T> dv, HeadsView<const T> dout,
                   HeadsView<const T> out, const T* stats, HeadsView<const T> q,
                   HeadsView<const T> k, HeadsView<const T> v, MaskView<T> mask,
                   const SdpaSizes& n, T scale, const DropoutMask& drop) {
  const TilePath path = std::is_same_v<T, float> ? tile_path() : TilePath::blas;
  const bool x512 = path == TilePath::avx512, own = path != TilePath::blas;
  const int64_t ldt = transposed_ld(n.Tk);
  // --precision bf16 on a CPU with bf16 units: all five products on bf16 operands
  // (sdpa_amx.h), S recomputed with the forward's very rounding
  const bool bf16 = std::is_same_v<T, float> && bf16_attention_tiles();
  SerialBlas serial;
  parallel_for(0, n.B * n.NH, 1, [&](int64_t lo, int64_t hi) {
    thread_local AmxAttentionGrad tiles;
    T* P = scratch<T>(0, kBr * kBc);                           // P, recomputed
    T* dP = scratch<T>(1, kBr * kBc);                          // dP, then dS
    T* Pd = drop.on ? scratch<T>(2, kBr * kBc) : P;            // z ∘ P
    T* z = scratch<T>(3, kBr * kBc);                           // dropout multipliers
    T* D = scratch<T>(4, n.Tq);
    T* KT = scratch<T>(5, n.HS * ldt);   // Kᵀ of this head, (HS, Tk), row stride ldt
    T* VT = scratch<T>(6, n.HSv * ldt);  // Vᵀ, (HSv, Tk), row stride ldt
    T* Kbuf = own ? scratch<T>(7, n.HS * n.Tk) : nullptr;
    T* Qbuf = own ? scratch<T>(8, n.HS * n.Tq) : nullptr;
    T* Gbuf = own ? scratch<T>(9, n.HSv * n.Tq) : nullptr;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / n.NH, h = bh % n.NH;
      HeadRows<T> K{}, Q{}, G{};  // G: dO
      if constexpr (std::is_same_v<T, float>) {
        if (bf16)
          tiles.pack_head(q.row(b, h, 0), q.st, k.row(b, h, 0), k.st, v.row(b, h, 0), v.st,
                          dout.row(b, h, 0), dout.st, n.Tq, n.Tk, n.HS, n.HSv);
      }
      if (!bf16) {
        transpose_head(KT, ldt, k.row(b, h, 0), k.st, n.Tk, n.HS);
        transpose_head(VT, ldt, v.row(b, h, 0), v.st, n.Tk, n.HSv);
        K = head_rows(own, Kbuf, k, b, h, n.Tk, n.HS);
        Q = head_rows(own, Qbuf, q, b, h, n.Tq, n.HS);
        G = head_rows(own, Gbuf, dout, b, h, n.Tq, n.HSv);
      }
      const T* st = stats + 2 * bh * n.Tq;  // (m, l) of each query row
      for (int64_t i = 0; i < n.Tq; ++i) {  // D_i = dO_i·O_i
        const T *g = dout.row(b, h, i), *o = out.row(b, h, i);
        D[i] = static_cast<T>(row_sum(n.HSv, [&](int64_t d) { return double(g[d]) * o[d]; }));
      }
      if (n.Tq == 0) {  // no queries: nothing flows to the keys and values
        zero_rows(dk, b, h, n.Tk, n.HS);
        zero_rows(dv, b, h, n.Tk, n.HSv);
      }
      if (n.Tk == 0) zero_rows(dq, b, h, n.Tq, n.HS);
      for (int64_t j0 = 0; j0 < n.Tk; j0 += kBc) {
        const int64_t cols = std::min(kBc, n.Tk - j0);
        for (int64_t i0 = 0; i0 < n.Tq; i0 += kBr) {
          const int64_t rows = std::min(kBr, n.Tq - i0);
          // S = scale·Q_i·K_jᵀ and dP = dO_i·V_jᵀ
          if constexpr (std::is_same_v<T, float>) {
            if (bf16) tiles.scores(P, dP, kBc, i0, rows, j0, cols, scale);
          }
          if (!bf16) {
            product<T>(path, false, rows, cols, n.HS, scale, Q.row(i0), Q.ld, KT + j0, ldt, T(0),
                       P, kBc);
            product<T>(path, false, rows, cols, n.HSv, T(1), G.row(i0), G.ld, VT + j0, ldt,
                       T(0), dP, kBc);
          }
          grad_tile(x512, P, dP, Pd, z, rows, cols, mask, b, h, i0, j0, st + 2 * i0, D + i0,
                    bh * n.Tq + i0, n.Tk, drop);
          // dV_j += (z∘P)ᵀ·dO_i, dQ_i += scale·dS·K_j, dK_j += scale·dSᵀ·Q_i (first: overwrite)
          if constexpr (std::is_same_v<T, float>) {
            if (bf16) {
              tiles.grads(Pd, dP, kBc, i0, rows, j0, cols, scale, dv.row(b, h, j0), dv.st,
                          dk.row(b, h, j0), dk.st, dq.row(b, h, i0), dq.st, i0 > 0, j0 > 0);
              continue;
            }
          }
          const T first_i = i0 == 0 ? T(0) : T(1), first_j = j0 == 0 ? T(0) : T(1);
          product<T>(path, true, cols, n.HSv, rows, T(1), Pd, kBc, G.row(i0), G.ld,
                     first_i, dv.row(b, h, j0), dv.st);
          product<T>(path, false, rows, n.HS, cols, scale, dP, kBc, K.row(j0), K.ld,
                     first_j, dq.row(b, h, i0), dq.st);
          product<T>(path, true, cols, n.HS, rows, scale, dP, kBc, Q.row(i0), Q.ld, first_i,
                     dk.row(b, h, j0), dk.st);
        }
      }
    }
  });
}

template void sdpa_forward<float>(HeadsView<float>, float*, HeadsView<const float>,
                                  HeadsView<const float>, HeadsView<const float>,
                                  MaskView<float>, const SdpaSizes&, float, const DropoutMask&);
template void sdpa_forward<double>(HeadsView<double>, double*, HeadsView<const double>,
                                   HeadsView<const double>, HeadsView<const double>,
                                   MaskView<double>, const SdpaSizes&, double,
                                   const DropoutMask&);
template void sdpa_backward<float>(HeadsView<float>, HeadsView<float>, HeadsView<float>,
                                   HeadsView<const float>, HeadsView<const float>, const float*,
                                   HeadsView<const float>, HeadsView<const float>,
                                   HeadsView<const float>, MaskView<float>, const SdpaSizes&,
                                   float, const DropoutMask&);
template void sdpa_backward<double>(HeadsView<double>, HeadsView<double>, HeadsView<double>,
                                    HeadsView<const double>, HeadsView<const double>,
                                    const double*, HeadsView<const double>,
                                    HeadsView<const double>, HeadsView<const double>,
                                    MaskView<double>, const SdpaSizes&, double,
                                    const DropoutMask&);

}  // namespace mase::cpu
