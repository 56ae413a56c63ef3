// cuda/sdpa_backward.cu — flash attention backward on the GPU, fp32 (twin of the backward in
// runtime/cpu/sdpa.cpp; contract: runtime/kernels/sdpa.h). Read cuda/sdpa_forward.cu first.
//
// FlashAttention-2 (Dao 2023, Algorithm 2): P is recomputed from the saved row statistics
// (m, l) instead of being stored, tile by tile:
//   D_i = dO_i·O_i                                     one number per query row (kernel 1)
//   P   = exp(scale·Q_i·K_jᵀ + mask − m) / l           dP = z ∘ (dO_i·V_jᵀ)
//   dS  = P ∘ (dP − D)                                 (Σ_j P_ij·dP_ij = D_i: the row sum is free)
//   dV_j += (z ∘ P)ᵀ·dO_i    dK_j += scale·dSᵀ·Q_i     (kernel 2: one block per key tile)
//   dQ_i += scale·dS·K_j                               (kernel 3: one block per query tile)
// FlashAttention-2 computes dQ in kernel 2 too, adding each key tile's share with atomicAdd.
// This file's first version (SdpaBackward::two_kernel, rung v2 of the ladder) uses a third kernel
// that walks the key tiles for its query tile instead and recomputes S and dP (3 more tile
// products of the 7), so that every gradient element is summed by one thread in a fixed order:
// the same bits on every run, like the CPU kernel, and no atomics to reason about. Memory: the D
// workspace (B·NH·Tq floats) and nothing of size T². On an H100 it ran the backward at ~0.6×
// PyTorch's speed; the one-pass kernel that replaced it as the default, deterministic too, is
// cuda/sdpa_backward_fused.cu (read it next). This file keeps kernel 1 for both, and the
// dispatch.
// Rows that attended to nothing (l = 0: every score −inf) get P = 0, dS = 0, as on the CPU.
#include "cuda/check.h"
#include "cuda/sdpa_backward.cuh"
#include "cuda/stream.h"
#include "runtime/kernels/sdpa.h"

namespace mase::cuda {
namespace {

using namespace sdpa_bwd;

// Kernel 1: D[bh·Tq + i] = Σ_d dout[b, h, i, d]·out[b, h, i, d], one warp per query row; with
// zero_dq, the warp also sets the row of dq to 0 (for a backward that adds into it).
__global__ void row_dots(BwdArgs a, int HS, int64_t rows, bool zero_dq) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % 32;
  const int64_t bh = row / a.Tq, i = row % a.Tq, b = bh / a.NH, h = bh % a.NH;
  const float *g = head_row(a.dout, b, h, i), *o = head_row(a.out, b, h, i);
  float s = 0.f;
  for (int d = lane; d < HS; d += 32) s = fmaf(g[d], o[d], s);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) a.D[row] = s;
  if (zero_dq) {
    float* dq = head_row(a.dq, b, h, i);
    for (int d = lane; d < HS; d += 32) dq[d] = 0.f;
  }
}

// Kernel 2: one block per (b, h, tile of 64 keys). K_j, V_j stay in shared memory; for each
// query tile i: recompute z ∘ P and dS for the 64 × 64 pairs, then dV_j += (z ∘ P)ᵀ·dO_i and
// dK_j += scale·dSᵀ·Q_i, accumulated in registers (rows ty·4 + i of the key tile).
template <int HS>
constexpr int kDkdvStages = walk_stages<HS>(2, 2);  // K, V fixed; P, dS

template <int HS>
__global__ void __launch_bounds__(kThreads) flash_backward_dkdv(BwdArgs a) {
  constexpr int kS = kDkdvStages<HS>, kT = kBr * kLd<HS>;  // stages; floats of a tile
  extern __shared__ __align__(128) float4 smem4[];
  float* Ks = reinterpret_cast<float*>(smem4);  // (kBc, HS)
  float* Vs = Ks + kT;                          // (kBc, HS)
  float* Ps = Vs + kT;                          // (kBr, kBc) z ∘ P
  float* dSs = Ps + kBr * kLdP;                 // (kBr, kBc) scale·dS
  float* QdO = dSs + kBr * kLdP;                // kS stages of (kBr, HS) Q and dO tiles
  uint8_t* keep = keep_tile<HS>(Ks, 2 + 2 * kS, 2);  // (kBr, kBc) dropout decisions
  constexpr int kN = Cols<HS>::kN;

  const auto [bh, b, h, j0, tx, ty] = block_tile(a.Tk, a.NH);  // keys j0 .. j0 + 63
  load_rows<HS, kBc>(Ks, head_row(a.k, b, h, j0), a.k.st, a.Tk - j0);
  load_rows<HS, kBc>(Vs, head_row(a.v, b, h, j0), a.v.st, a.Tk - j0);
  const TileWalk<HS, kS> walk{QdO, head_row(a.q, b, h, 0), head_row(a.dout, b, h, 0), a.q.st,
                              a.dout.st, a.Tq, (a.Tq + kBr - 1) / kBr};

  float dk[4][kN] = {}, dv[4][kN] = {};
  walk.start();
  for (int t = 0; t < walk.n; ++t) {
    if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, t * kBr, j0);
    walk.step(t);  // Q_i, dO_i (and, the first time, Ks, Vs) are in shared memory
    const int i0 = t * kBr;
    const float *Qs = walk.a(t), *dOs = walk.b(t);

    pair_p_ds<HS>(Ps, dSs, Qs, Ks, dOs, Vs, a, keep, bh, b, h, i0, j0, ty, tx);
    __syncthreads();  // the tiles of z ∘ P and scale·dS are complete
    mma_atb<HS>(dv, Ps, dOs, ty, tx);  // dV_j += (z ∘ P)ᵀ·dO_i
    mma_atb<HS>(dk, dSs, Qs, ty, tx);  // dK_j += scale·dSᵀ·Q_i
  }
  write_dk_dv<HS>(a, dk, dv, b, h, j0, ty, tx);
}

// Kernel 3: one block per (b, h, tile of 64 queries). Q_i, dO_i stay in shared memory; for
// each key tile j: recompute dS, then dQ_i += scale·dS·K_j in registers.
template <int HS>
constexpr int kDqStages = walk_stages<HS>(2, 1);  // Q, dO fixed; dS

template <int HS>
__global__ void __launch_bounds__(kThreads) flash_backward_dq(BwdArgs a) {
  constexpr int kS = kDqStages<HS>, kT = kBr * kLd<HS>;  // stages; floats of a tile
  extern __shared__ __align__(128) float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);  // (kBr, HS)
  float* dOs = Qs + kT;                         // (kBr, HS)
  float* dSs = dOs + kT;                        // (kBr, kBc) scale·dS
  float* KV = dSs + kBr * kLdP;                 // kS stages of (kBc, HS) K and V tiles
  uint8_t* keep = keep_tile<HS>(Qs, 2 + 2 * kS, 1);  // (kBr, kBc) dropout decisions
  constexpr int kN = Cols<HS>::kN;

  const auto [bh, b, h, i0, tx, ty] = block_tile(a.Tq, a.NH);  // queries i0 .. i0 + 63
  load_rows<HS, kBr>(Qs, head_row(a.q, b, h, i0), a.q.st, a.Tq - i0);
  load_rows<HS, kBr>(dOs, head_row(a.dout, b, h, i0), a.dout.st, a.Tq - i0);
  float m[4], l[4], D[4];
  load_row_stats(m, l, D, a, bh, i0, ty);
  const TileWalk<HS, kS> walk{KV, head_row(a.k, b, h, 0), head_row(a.v, b, h, 0), a.k.st,
                              a.v.st, a.Tk, (a.Tk + kBc - 1) / kBc};

  float dq[4][kN] = {};
  walk.start();
  for (int t = 0; t < walk.n; ++t) {
    if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, i0, t * kBc);
    walk.step(t);  // K_j, V_j (and, the first time, Qs, dOs) are in shared memory
    const int j0 = t * kBc;
    const float *Ks = walk.a(t), *Vs = walk.b(t);
    float s[4][4] = {}, dp[4][4] = {};
    mma_abt<HS>(s, Qs, Ks, ty, tx);
    mma_abt<HS>(dp, dOs, Vs, ty, tx);
    recompute_ds(s, dp, a, keep, b, h, i0, j0, ty, tx, m, l, D, a.scale);
    grid_store(dSs, dp, ty, tx);
    __syncthreads();
    mma_ab<HS>(dq, dSs, Ks, ty, tx);  // dQ_i += scale·dS·K_j
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    if (r >= a.Tq) continue;
    float* row = head_row(a.dq, b, h, r);
#pragma unroll
    for (int u = 0; u < kN; ++u) row[Cols<HS>::col(tx, u)] = dq[i][u];
  }
}

template <int HS>
void launch(const BwdArgs& a, int64_t BH) {
  const int64_t q_blocks = BH * ((a.Tq + kBr - 1) / kBr), k_blocks = BH * ((a.Tk + kBc - 1) / kBc);
  MASE_CHECK(q_blocks < (int64_t(1) << 31) && k_blocks < (int64_t(1) << 31), ShapeError,
             "[sdpa] too many tiles: ", q_blocks, " query, ", k_blocks, " key");
  cudaStream_t s = stream();
  if (k_blocks > 0) {  // dK, dV (Tq = 0: no query tile, they are written as 0)
    constexpr size_t smem = smem_bytes<HS>(2 + 2 * kDkdvStages<HS>, 2);
    MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dkdv<HS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    flash_backward_dkdv<HS><<<unsigned(k_blocks), kThreads, smem, s>>>(a);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  if (q_blocks > 0) {  // dQ (Tk = 0: no key tile, written as 0)
    constexpr size_t smem = smem_bytes<HS>(2 + 2 * kDqStages<HS>, 1);
    MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dq<HS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    flash_backward_dq<HS><<<unsigned(q_blocks), kThreads, smem, s>>>(a);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

int64_t sdpa_backward_workspace(const SdpaSizes& n, SdpaMath math, SdpaBackward alg) {
  const int64_t D = n.B * n.NH * n.Tq;
  if (math != SdpaMath::fp32 || alg != SdpaBackward::fused || !sdpa_supported(n) || n.Tq == 0 ||
      n.Tk == 0)
    return D;
  return D + int64_t(fused_groups(n) - 1) * D * n.HS;
}

void sdpa_backward(HeadsView<float> dq, HeadsView<float> dk, HeadsView<float> dv,
                   HeadsView<const float> dout, HeadsView<const float> out, const float* stats,
                   HeadsView<const float> q, HeadsView<const float> k, HeadsView<const float> v,
                   MaskView<float> mask, const SdpaSizes& n, float scale,
                   const DropoutMask& drop, float* workspace, SdpaMath math, SdpaBackward alg) {
  MASE_CHECK(sdpa_supported(n), ShapeError, "[sdpa] the CUDA kernel takes HS = HSv in {32, 64, ",
             "128}, got HS ", n.HS, ", HSv ", n.HSv);
  MASE_CHECK(n.Tq < (int64_t(1) << 31) && n.Tk < (int64_t(1) << 31) && n.NH < (int64_t(1) << 31),
             ShapeError, "[sdpa] sizes beyond 2^31: Tq ", n.Tq, ", Tk ", n.Tk);
  const int64_t BH = n.B * n.NH;
  if (BH == 0) return;
  const BwdArgs a{dq, dk, dv, dout, out, stats, q, k, v, mask, int(n.NH), int(n.Tq), int(n.Tk),
                  scale, drop, static_cast<float>(drop.scale), workspace};
  // the one-pass kernels (cuda/sdpa_backward_fused.cu) need a query and a key; without one,
  // the two kernels write the zero gradients
  const bool one_pass = math == SdpaMath::fp32 && alg != SdpaBackward::two_kernel && n.Tq > 0 &&
                        n.Tk > 0;
  const bool atomic = one_pass && alg == SdpaBackward::atomic;
  const int64_t rows = BH * n.Tq;
  if (rows > 0) {
    constexpr int kRowsPerBlock = 8;  // 8 warps, one query row each
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    MASE_CHECK(blocks < (int64_t(1) << 31), ShapeError, "[sdpa] too many rows: ", rows);
    row_dots<<<unsigned(blocks), kRowsPerBlock * 32, 0, stream()>>>(a, int(n.HS), rows, atomic);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  if (math != SdpaMath::fp32)  // the tensor cores: cuda/sdpa_backward_tc.cu
    return launch_backward_tc(a, BH, int(n.HS), math == SdpaMath::tf32x3);
  if (one_pass)  // the partial dQ sums follow D in the workspace
    return launch_backward_fused(a, BH, int(n.HS), atomic, workspace + rows,
                                 atomic ? 1 : fused_groups(n));
  switch (n.HS) {
    case 32: launch<32>(a, BH); break;
    case 64: launch<64>(a, BH); break;
    default: launch<128>(a, BH); break;
  }
}

}  // namespace mase::cuda
