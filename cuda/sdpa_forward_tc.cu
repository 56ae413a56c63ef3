// cuda/sdpa_forward_tc.cu — the flash-attention forward with its two tile products on the
// tensor cores (TF32, or tf32x3 for fp32 accuracy: cuda/sdpa_mma.cuh); rung v3 of the
// attention ladder (docs/gpu-kernels.md). Same blocks, tiles and online softmax as the FMA
// kernel (cuda/sdpa_forward.cu, read it first); what changes is who computes the products:
//   S = Q·K_jᵀ    8 warps × two 16 × 16 pieces, on the tensor cores, stored to shared memory
//   softmax       the 16 × 16 thread grid reads S back (each thread its 4 × 4 scores, as in
//                 the FMA kernel), updates m, l, rescales its O and writes z ∘ P in place
//   P·V_j         on the tensor cores into a fresh accumulator, stored to shared memory (over
//                 the K tile, which is no longer needed), then added to the threads' O.
// O stays in the threads' registers, not in accumulator fragments: the online softmax must
// rescale O row by row, and which rows a fragment element belongs to is not ours to know.
#include "cuda/check.h"
#include "cuda/sdpa_forward.cuh"
#include "cuda/sdpa_mma.cuh"
#include "cuda/stream.h"

namespace mase::cuda::sdpa_fwd {
namespace {

using namespace sdpa_mma;

template <int HS, bool k3>
__global__ void __launch_bounds__(kThreads) flash_forward_tc(FwdArgs a) {
  extern __shared__ __align__(128) float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);  // (kBr, HS)   this block's queries
  float* Ss = Qs + kBr * kLd<HS>;               // (kBr, kBc)  S, then z ∘ P
  float* KV = Ss + kBr * kLdP;                  // 2 stages of (kBc, HS) K (then P·V) and V
  uint8_t* keep = keep_tile<HS>(Qs, 5, 1);      // (kBr, kBc)  dropout decisions
  constexpr int kN = Cols<HS>::kN;

  const auto [bh, b, h, i0, tx, ty] = block_tile(a.Tq, a.NH);  // queries i0 .. i0 + 63
  const int warp = threadIdx.x / 32, wr = warp % 4, wc = warp / 4;
  load_rows<HS, kBr>(Qs, head_row(a.q, b, h, i0), a.q.st, a.Tq - i0);
  const TileWalk<HS, 2> walk{KV, head_row(a.k, b, h, 0), head_row(a.v, b, h, 0), a.k.st, a.v.st,
                             a.Tk, (a.Tk + kBc - 1) / kBc};

  float m[4], l[4], o[4][kN];
  start_rows<HS>(m, l, o);

  walk.start();
  for (int t = 0; t < walk.n; ++t) {
    if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, i0, t * kBc);
    walk.step(t);  // K_j, V_j (and, the first time, Qs) are in; K_j+1, V_j+1 on the way
    const int j0 = t * kBc;
    float *Ks = walk.a(t), *Vs = walk.b(t);
    {
      Acc acc[2];
      zero(acc);
      warp_abt<HS, k3>(acc, Qs, Ks, wr, wc);  // S = Q·K_jᵀ
      store_scores(Ss, acc, wr, wc);
    }
    __syncthreads();  // S is complete; nobody reads Ks any more
    float s[4][4], corr[4];
    grid_load(s, Ss, ty, tx);
    online_softmax_tile(s, m, l, corr, a, keep, b, h, i0, j0, ty, tx);  // s = z ∘ P
    scale_rows<HS>(o, corr);
    grid_store(Ss, s, ty, tx);
    __syncthreads();  // z ∘ P is complete
    {
      Acc acc[kOutFrags<HS>];
      zero(acc);
      warp_ab<HS, k3>(acc, Ss, Vs, wr, wc);  // (z ∘ P)·V_j
      store_rows<HS>(Ks, acc, wr, wc);
    }
    __syncthreads();  // P·V_j is complete
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float pv[kN];
      Cols<HS>::load(pv, Ks + (ty * 4 + i) * kLd<HS>, tx);
#pragma unroll
      for (int u = 0; u < kN; ++u) o[i][u] += pv[u];
    }
  }

  write_output<HS>(o, m, l, a, bh, b, h, i0, ty, tx);
}

template <int HS, bool k3>
void launch(const FwdArgs& a, int64_t BH) {
  constexpr size_t smem = smem_bytes<HS>(5, 1);  // Q, 2 stages of K and V; S
  MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_forward_tc<HS, k3>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t blocks = BH * ((a.Tq + kBr - 1) / kBr);
  MASE_CHECK(blocks < (int64_t(1) << 31), ShapeError, "[sdpa] too many query tiles: ", blocks);
  flash_forward_tc<HS, k3><<<unsigned(blocks), kThreads, smem, stream()>>>(a);
  MASE_CUDA_CHECK(cudaGetLastError());
}

template <bool k3>
void launch_hs(const FwdArgs& a, int64_t BH, int HS) {
  switch (HS) {
    case 32: launch<32, k3>(a, BH); break;
    case 64: launch<64, k3>(a, BH); break;
    default: launch<128, k3>(a, BH); break;
  }
}

}  // namespace

void launch_forward_tc(const FwdArgs& a, int64_t BH, int HS, bool three_pass) {
  if (three_pass) launch_hs<true>(a, BH, HS);
  else launch_hs<false>(a, BH, HS);
}

}  // namespace mase::cuda::sdpa_fwd
