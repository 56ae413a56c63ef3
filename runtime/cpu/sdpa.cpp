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
// Inner products: each tile product is one serial OpenBLAS call (sgemm/dgemm, any strides and
// transposes, so Q, dO are read in place), made from inside TBB tasks with OpenBLAS set to 1
// thread for the duration of the kernel (SerialBlas below: two pools never nest). K and V are
// first copied transposed, one head at a time (transpose_head): Q·Kᵀ and dO·Vᵀ then run as
// plain products, which OpenBLAS does faster (6% of the forward + backward at T = 256). Why not
// hand-written loops: on this machine OpenBLAS's SkylakeX kernels use AVX-512, and a measured
// 6×16 AVX2 micro-kernel reached half their speed on these tile shapes (an AVX-512 one about
// the same as OpenBLAS, at the cost of a second code path per CPU) — docs/performance.md.
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

#include "runtime/cpu/blas.h"
#include "runtime/cpu/philox_x32.h"
#include "runtime/kernels/matmul.h"
#include "runtime/cpu/rowwise.h"
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

// OpenBLAS on one thread while tile GEMMs run inside TBB tasks; the caller's count after.
struct SerialBlas {
  const int threads = num_threads();
  SerialBlas() {
    if (threads > 1) blas::set_num_threads(1);
  }
  ~SerialBlas() {
    if (threads > 1) blas::set_num_threads(threads);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

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
  thread_local std::vector<T> buffers[7];
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
  SerialBlas serial;
  parallel_for(0, n.B * n.NH * q_tiles, 1, [&](int64_t lo, int64_t hi) {
    T* S = scratch<T>(0, kBr * kBc);    // scores, then probabilities, of one tile
    T* z = scratch<T>(1, kBc);          // dropout multipliers of one row of the tile
    T* KT = scratch<T>(2, n.HS * n.Tk);  // Kᵀ of head bh_t, (HS, Tk)
    int64_t bh_t = -1;
    T m[kBr], l[kBr];                   // running max and sum per query row
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t bh = u / q_tiles, b = bh / n.NH, h = bh % n.NH;
      const int64_t i0 = (u % q_tiles) * kBr, rows = std::min(kBr, n.Tq - i0);
      if (bh != bh_t) {  // a task's units are consecutive: each head is transposed once per task
        transpose_head(KT, n.Tk, k.row(b, h, 0), k.st, n.Tk, n.HS);
        bh_t = bh;
      }
      T* o = out.row(b, h, i0);  // O accumulates in place in the output
      std::fill(m, m + rows, kNegInf<T>);
      std::fill(l, l + rows, T(0));
      for (int64_t j0 = 0; j0 < n.Tk; j0 += kBc) {
        const int64_t cols = std::min(kBc, n.Tk - j0);
        // S = scale·Q_i·K_jᵀ (columns j0 .. j0 + cols of Kᵀ)
        gemm<T>(false, false, rows, cols, n.HS, scale, q.row(b, h, i0), q.st, KT + j0, n.Tk,
                T(0), S, kBc);
        for (int64_t r = 0; r < rows; ++r) {
          T* s = S + r * kBc;
          if (mask.data) add_mask_row(s, mask, b, h, i0 + r, j0, cols);
          const T m_new = std::max(m[r], row_max(s, cols));
          const T shift = m_new == kNegInf<T> ? T(0) : m_new;  // all −inf so far: exps are 0
          const T c = exp_of(m[r] - shift);                    // m = −inf: c = 0
          l[r] = l[r] * c + exp_shift_sum(s, s, shift, cols);  // s = P (un-dropped)
          m[r] = m_new;
          if (j0 > 0 && c != T(1)) scale_row(o + r * out.st, c, n.HSv);
          if (drop.on) {
            dropout_factors(z, (bh * n.Tq + i0 + r) * n.Tk + j0, cols, drop);
            for (int64_t j = 0; j < cols; ++j) s[j] *= z[j];
          }
        }
        // O = O·c + P·V_j (the first tile overwrites: beta = 0)
        gemm<T>(false, false, rows, n.HSv, cols, T(1), S, kBc, v.row(b, h, j0), v.st,
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
  SerialBlas serial;
  parallel_for(0, n.B * n.NH, 1, [&](int64_t lo, int64_t hi) {
    T* P = scratch<T>(0, kBr * kBc);                           // P, recomputed
    T* dP = scratch<T>(1, kBr * kBc);                          // dP, then dS
    T* Pd = drop.on ? scratch<T>(2, kBr * kBc) : P;            // z ∘ P
    T* z = scratch<T>(3, kBc);
    T* D = scratch<T>(4, n.Tq);
    T* KT = scratch<T>(5, n.HS * n.Tk);   // Kᵀ of this head, (HS, Tk)
    T* VT = scratch<T>(6, n.HSv * n.Tk);  // Vᵀ, (HSv, Tk)
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t b = bh / n.NH, h = bh % n.NH;
      transpose_head(KT, n.Tk, k.row(b, h, 0), k.st, n.Tk, n.HS);
      transpose_head(VT, n.Tk, v.row(b, h, 0), v.st, n.Tk, n.HSv);
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
          gemm<T>(false, false, rows, cols, n.HS, scale, q.row(b, h, i0), q.st, KT + j0, n.Tk,
                  T(0), P, kBc);
          gemm<T>(false, false, rows, cols, n.HSv, T(1), dout.row(b, h, i0), dout.st, VT + j0,
                  n.Tk, T(0), dP, kBc);
          for (int64_t r = 0; r < rows; ++r) {
            T *p = P + r * kBc, *dp = dP + r * kBc;
            const T m_r = st[2 * (i0 + r)], l_r = st[2 * (i0 + r) + 1], d_r = D[i0 + r];
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
            dropout_factors(z, (bh * n.Tq + i0 + r) * n.Tk + j0, cols, drop);
            for (int64_t j = 0; j < cols; ++j) {
              p[j] = exp_flush_of(p[j] - m_r) * inv_l;
              pd[j] = p[j] * z[j];
              dp[j] = p[j] * (dp[j] * z[j] - d_r);
            }
          }
          // dV_j += (z∘P)ᵀ·dO_i, dQ_i += scale·dS·K_j, dK_j += scale·dSᵀ·Q_i (first: overwrite)
          const T first_i = i0 == 0 ? T(0) : T(1), first_j = j0 == 0 ? T(0) : T(1);
          gemm<T>(true, false, cols, n.HSv, rows, T(1), Pd, kBc, dout.row(b, h, i0), dout.st,
                  first_i, dv.row(b, h, j0), dv.st);
          gemm<T>(false, false, rows, n.HS, cols, scale, dP, kBc, k.row(b, h, j0), k.st, first_j,
                  dq.row(b, h, i0), dq.st);
          gemm<T>(true, false, cols, n.HS, rows, scale, dP, kBc, q.row(b, h, i0), q.st, first_i,
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
