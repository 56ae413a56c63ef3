// cuda/sdpa_backward.cuh — what the flash-attention backward kernels share: their arguments,
// the rows' saved statistics, and the recomputation of P and dS on a thread's 4 × 4 tile. The
// FMA kernels are cuda/sdpa_backward.cu (read it first) and cuda/sdpa_backward_fused.cu, the
// tensor-core ones cuda/sdpa_backward_tc.cu. Included by .cu files only.
#pragma once
#include "cuda/sdpa_tile.cuh"

namespace mase::cuda::sdpa_bwd {

using namespace sdpa_tile;

struct BwdArgs {
  HeadsView<float> dq, dk, dv;
  HeadsView<const float> dout, out;
  const float* stats;  // (B, NH, Tq, 2): (m, l) per query row
  HeadsView<const float> q, k, v;
  MaskView<float> mask;
  int NH, Tq, Tk;
  float scale;
  DropoutMask drop;
  float drop_scale;
  float* D;  // (B, NH, Tq) workspace: dO_i·O_i
};

// m, l (the forward's statistics) and D of the thread's query rows i0 + ty·4 + i; rows past Tq
// get l = 0, which makes their P and dS 0.
__device__ inline void load_row_stats(float (&m)[4], float (&l)[4], float (&D)[4],
                                      const BwdArgs& a, int64_t bh, int i0, int ty) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    const bool ok = r < a.Tq;
    m[i] = ok ? a.stats[2 * (bh * a.Tq + r)] : 0.f;
    l[i] = ok ? a.stats[2 * (bh * a.Tq + r) + 1] : 0.f;
    D[i] = ok ? a.D[bh * a.Tq + r] : 0.f;
  }
}

// dS (times `ds_scale`) and z ∘ P of the thread's 4 × 4 tile: rows r = i0 + ty·4 + i, keys
// c = j0 + tx + 16·j, from s = Q·Kᵀ and dp = dO·Vᵀ (un-scaled products) and the rows' m, l, D.
// On return s holds z ∘ P and dp holds ds_scale·dS; both are 0 outside the Tq × Tk range and
// on rows with l = 0.
__device__ inline void recompute_ds(float (&s)[4][4], float (&dp)[4][4], const BwdArgs& a,
                                    const uint8_t* keep, int64_t b, int64_t h, int i0, int j0,
                                    int ty, int tx, const float (&m)[4], const float (&l)[4],
                                    const float (&D)[4], float ds_scale) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    const bool row_ok = r < a.Tq && l[i] > 0.f;
    const float inv_l = row_ok ? 1.f / l[i] : 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = j0 + tx + 16 * j;
      float p = 0.f, ds = 0.f;
      if (row_ok && c < a.Tk) {
        const float sv = s[i][j] * a.scale + mask_at(a.mask, b, h, r, c);
        p = __expf(sv - m[i]) * inv_l;
        const float z = a.drop.on ? keep_factor(keep, a.drop_scale, ty, i, tx, j) : 1.f;
        ds = p * (dp[i][j] * z - D[i]) * ds_scale;
        p *= z;
      }
      s[i][j] = p;
      dp[i][j] = ds;
    }
  }
}

// One (query tile i, key tile j) pair's z ∘ P into Ps and scale·dS into dSs ((64, 64) tiles in
// shared memory), recomputed from Q_i, K_j, dO_i, V_j (tiles in shared memory) and the query
// rows' statistics; the caller then synchronises before reading them.
template <int HS>
__device__ inline void pair_p_ds(float* Ps, float* dSs, const float* Qs, const float* Ks,
                                 const float* dOs, const float* Vs, const BwdArgs& a,
                                 const uint8_t* keep, int64_t bh, int64_t b, int64_t h, int i0,
                                 int j0, int ty, int tx) {
  float m[4], l[4], D[4];
  load_row_stats(m, l, D, a, bh, i0, ty);
  float s[4][4] = {}, dp[4][4] = {};
  mma_abt<HS>(s, Qs, Ks, ty, tx);    // Q_i·K_jᵀ
  mma_abt<HS>(dp, dOs, Vs, ty, tx);  // dO_i·V_jᵀ
  recompute_ds(s, dp, a, keep, b, h, i0, j0, ty, tx, m, l, D, a.scale);
  grid_store(Ps, s, ty, tx);
  grid_store(dSs, dp, ty, tx);
}

// The thread's rows j0 + ty·4 + i (those < Tk) of dK and dV, from its registers.
template <int HS>
__device__ inline void write_dk_dv(const BwdArgs& a, const float (&dk)[4][Cols<HS>::kN],
                                   const float (&dv)[4][Cols<HS>::kN], int64_t b, int64_t h,
                                   int j0, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = j0 + ty * 4 + i;
    if (c >= a.Tk) continue;
    float *dkrow = head_row(a.dk, b, h, c), *dvrow = head_row(a.dv, b, h, c);
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) {
      dkrow[Cols<HS>::col(tx, u)] = dk[i][u];
      dvrow[Cols<HS>::col(tx, u)] = dv[i][u];
    }
  }
}

// The one-pass backward (cuda/sdpa_backward_fused.cu), after D is computed. atomic: one block
// per key tile adding into dq, which must hold zeros; else `groups` blocks a head (from
// fused_groups), dQ partial sums of groups 1 .. groups − 1 in `partials` ((groups − 1)·B·NH·Tq·HS
// floats), added to dq at the end. Needs Tq > 0 and Tk > 0.
void launch_backward_fused(const BwdArgs& a, int64_t BH, int HS, bool atomic, float* partials,
                           int groups);
// G, the groups of key tiles a head is split into by the deterministic one-pass kernel: the
// best fill of the GPU's `resident` blocks (see the .cu); the second asks the GPU for them.
int fused_groups(int64_t BH, int64_t key_tiles, int64_t resident);
int fused_groups(const SdpaSizes& n);

// The tensor-core dK/dV and dQ kernels (cuda/sdpa_backward_tc.cu), after D is computed: HS in
// {32, 64, 128}; three_pass = true for tf32x3, false for tf32.
void launch_backward_tc(const BwdArgs& a, int64_t BH, int HS, bool three_pass);

}  // namespace mase::cuda::sdpa_bwd
