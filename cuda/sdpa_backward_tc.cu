// cuda/sdpa_backward_tc.cu — the flash-attention backward with its tile products on the tensor
// cores (TF32, or tf32x3 for fp32 accuracy: cuda/sdpa_mma.cuh); rung v3 of the attention
// ladder. The same two kernels as the FMA backward (cuda/sdpa_backward.cu, read it first):
//   dK/dV  one block per key tile: for each query tile, S = Q·Kᵀ and dP = dO·Vᵀ on the tensor
//          cores into shared memory; the 16 × 16 thread grid turns them into z ∘ P and
//          scale·dS in place (recompute_ds, as the FMA kernels); then dV += (z ∘ P)ᵀ·dO and
//          dK += (scale·dS)ᵀ·Q on the tensor cores, accumulated in fragments for the whole walk;
//   dQ     one block per query tile: for each key tile the same S, dP → dS, then
//          dQ += (scale·dS)·K in fragments.
// Here the accumulators can stay in fragments (unlike the forward's O): nothing rescales them.
// At the end they go through shared memory so that only the rows inside the sequence are
// written (a fragment is stored whole, 16 rows at a time).
#include "cuda/check.h"
#include "cuda/sdpa_backward.cuh"
#include "cuda/sdpa_mma.cuh"
#include "cuda/stream.h"

namespace mase::cuda::sdpa_bwd {
namespace {

using namespace sdpa_mma;

// S = A·Bᵀ and dP = C·Dᵀ on the tensor cores into Ss, dPs, then, by the thread grid, z ∘ P
// into Ss and scale·dS into dPs for query rows i0 + …, keys j0 + … (recompute_ds).
template <int HS, bool k3>
__device__ inline void scores_to_ds(float* Ss, float* dPs, const float* Qs, const float* Ks,
                                    const float* dOs, const float* Vs, const BwdArgs& a,
                                    const uint8_t* keep, int64_t bh, int64_t b, int64_t h, int i0,
                                    int j0, int ty, int tx, int wr, int wc) {
  {
    Acc s_acc[2], p_acc[2];
    zero(s_acc);
    zero(p_acc);
    warp_abt<HS, k3>(s_acc, Qs, Ks, wr, wc);   // Q_i·K_jᵀ
    warp_abt<HS, k3>(p_acc, dOs, Vs, wr, wc);  // dO_i·V_jᵀ
    store_scores(Ss, s_acc, wr, wc);
    store_scores(dPs, p_acc, wr, wc);
  }
  __syncthreads();  // S and dP are complete
  float m[4], l[4], D[4], s[4][4], dp[4][4];
  load_row_stats(m, l, D, a, bh, i0, ty);
  grid_load(s, Ss, ty, tx);
  grid_load(dp, dPs, ty, tx);
  recompute_ds(s, dp, a, keep, b, h, i0, j0, ty, tx, m, l, D, a.scale);
  grid_store(Ss, s, ty, tx);
  grid_store(dPs, dp, ty, tx);
}

// Rows t0 .. t0 + 63 (those below T) of one head of `dst` from a (64, HS) tile in shared memory.
template <int HS>
__device__ inline void write_rows(const HeadsView<float>& dst, const float* tile, int64_t b,
                                  int64_t h, int t0, int T, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int t = t0 + ty * 4 + i;
    if (t >= T) continue;
    float x[Cols<HS>::kN];
    Cols<HS>::load(x, tile + (ty * 4 + i) * kLd<HS>, tx);
    float* row = head_row(dst, b, h, t);
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) row[Cols<HS>::col(tx, u)] = x[u];
  }
}

// Stages of the walks: double buffering where shared memory allows (not at HS = 128).
template <int HS>
constexpr int kStages = walk_stages<HS>(2, 2);  // 2 fixed tiles; S, dP

template <int HS, bool k3>
__global__ void __launch_bounds__(kThreads) flash_backward_dkdv_tc(BwdArgs a) {
  constexpr int kS = kStages<HS>, kT = kBr * kLd<HS>;  // stages; floats of a tile
  extern __shared__ __align__(128) float4 smem4[];
  float* Ks = reinterpret_cast<float*>(smem4);  // (kBc, HS)
  float* Vs = Ks + kT;                          // (kBc, HS)
  float* Ss = Vs + kT;                          // (kBr, kBc) S, then z ∘ P
  float* dPs = Ss + kBr * kLdP;                 // (kBr, kBc) dP, then scale·dS
  float* QdO = dPs + kBr * kLdP;                // kS stages of (kBr, HS) Q and dO tiles
  uint8_t* keep = keep_tile<HS>(Ks, 2 + 2 * kS, 2);  // (kBr, kBc) dropout decisions

  const auto [bh, b, h, j0, tx, ty] = block_tile(a.Tk, a.NH);  // keys j0 .. j0 + 63
  const int warp = threadIdx.x / 32, wr = warp % 4, wc = warp / 4;
  load_rows<HS, kBc>(Ks, head_row(a.k, b, h, j0), a.k.st, a.Tk - j0);
  load_rows<HS, kBc>(Vs, head_row(a.v, b, h, j0), a.v.st, a.Tk - j0);
  const TileWalk<HS, kS> walk{QdO, head_row(a.q, b, h, 0), head_row(a.dout, b, h, 0), a.q.st,
                              a.dout.st, a.Tq, (a.Tq + kBr - 1) / kBr};

  Acc dk[kOutFrags<HS>], dv[kOutFrags<HS>];
  zero(dk);
  zero(dv);
  walk.start();
  for (int t = 0; t < walk.n; ++t) {
    if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, t * kBr, j0);
    walk.step(t);  // Q_i, dO_i (and, the first time, Ks, Vs) are in shared memory
    const int i0 = t * kBr;
    const float *Qs = walk.a(t), *dOs = walk.b(t);
    scores_to_ds<HS, k3>(Ss, dPs, Qs, Ks, dOs, Vs, a, keep, bh, b, h, i0, j0, ty, tx, wr, wc);
    __syncthreads();  // z ∘ P and scale·dS are complete
    warp_atb<HS, k3>(dv, Ss, dOs, wr, wc);  // dV_j += (z ∘ P)ᵀ·dO_i
    warp_atb<HS, k3>(dk, dPs, Qs, wr, wc);  // dK_j += (scale·dS)ᵀ·Q_i
  }
  __syncthreads();  // the tiles are free: stage dK and dV in the first one's place
  store_rows<HS>(QdO, dk, wr, wc);
  store_rows<HS>(QdO + kT, dv, wr, wc);
  __syncthreads();
  write_rows<HS>(a.dk, QdO, b, h, j0, a.Tk, ty, tx);
  write_rows<HS>(a.dv, QdO + kT, b, h, j0, a.Tk, ty, tx);
}

template <int HS, bool k3>
__global__ void __launch_bounds__(kThreads) flash_backward_dq_tc(BwdArgs a) {
  constexpr int kS = kStages<HS>, kT = kBr * kLd<HS>;  // stages; floats of a tile
  extern __shared__ __align__(128) float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);  // (kBr, HS)
  float* dOs = Qs + kT;                         // (kBr, HS)
  float* Ss = dOs + kT;                         // (kBr, kBc) S, then z ∘ P (unused)
  float* dPs = Ss + kBr * kLdP;                 // (kBr, kBc) dP, then scale·dS
  float* KV = dPs + kBr * kLdP;                 // kS stages of (kBc, HS) K and V tiles
  uint8_t* keep = keep_tile<HS>(Qs, 2 + 2 * kS, 2);  // (kBr, kBc) dropout decisions

  const auto [bh, b, h, i0, tx, ty] = block_tile(a.Tq, a.NH);  // queries i0 .. i0 + 63
  const int warp = threadIdx.x / 32, wr = warp % 4, wc = warp / 4;
  load_rows<HS, kBr>(Qs, head_row(a.q, b, h, i0), a.q.st, a.Tq - i0);
  load_rows<HS, kBr>(dOs, head_row(a.dout, b, h, i0), a.dout.st, a.Tq - i0);
  const TileWalk<HS, kS> walk{KV, head_row(a.k, b, h, 0), head_row(a.v, b, h, 0), a.k.st,
                              a.v.st, a.Tk, (a.Tk + kBc - 1) / kBc};

  Acc dq[kOutFrags<HS>];
  zero(dq);
  walk.start();
  for (int t = 0; t < walk.n; ++t) {
    if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, i0, t * kBc);
    walk.step(t);  // K_j, V_j (and, the first time, Qs, dOs) are in shared memory
    const int j0 = t * kBc;
    const float *Ks = walk.a(t), *Vs = walk.b(t);
    scores_to_ds<HS, k3>(Ss, dPs, Qs, Ks, dOs, Vs, a, keep, bh, b, h, i0, j0, ty, tx, wr, wc);
    __syncthreads();  // scale·dS is complete
    warp_ab<HS, k3>(dq, dPs, Ks, wr, wc);  // dQ_i += (scale·dS)·K_j
  }
  __syncthreads();  // Qs is free: stage dQ there
  store_rows<HS>(Qs, dq, wr, wc);
  __syncthreads();
  write_rows<HS>(a.dq, Qs, b, h, i0, a.Tq, ty, tx);
}

template <int HS, bool k3>
void launch(const BwdArgs& a, int64_t BH) {
  const int64_t q_blocks = BH * ((a.Tq + kBr - 1) / kBr), k_blocks = BH * ((a.Tk + kBc - 1) / kBc);
  MASE_CHECK(q_blocks < (int64_t(1) << 31) && k_blocks < (int64_t(1) << 31), ShapeError,
             "[sdpa] too many tiles: ", q_blocks, " query, ", k_blocks, " key");
  constexpr size_t smem = smem_bytes<HS>(2 + 2 * kStages<HS>, 2);
  if (k_blocks > 0) {  // Tq = 0: the walk is empty and dK, dV are written as 0
    MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dkdv_tc<HS, k3>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    flash_backward_dkdv_tc<HS, k3><<<unsigned(k_blocks), kThreads, smem, stream()>>>(a);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  if (q_blocks > 0) {  // Tk = 0: dQ is written as 0
    MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dq_tc<HS, k3>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    flash_backward_dq_tc<HS, k3><<<unsigned(q_blocks), kThreads, smem, stream()>>>(a);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

template <bool k3>
void launch_hs(const BwdArgs& a, int64_t BH, int HS) {
  switch (HS) {
    case 32: launch<32, k3>(a, BH); break;
    case 64: launch<64, k3>(a, BH); break;
    default: launch<128, k3>(a, BH); break;
  }
}

}  // namespace

void launch_backward_tc(const BwdArgs& a, int64_t BH, int HS, bool three_pass) {
  if (three_pass) launch_hs<true>(a, BH, HS);
  else launch_hs<false>(a, BH, HS);
}

}  // namespace mase::cuda::sdpa_bwd
