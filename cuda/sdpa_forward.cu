// cuda/sdpa_forward.cu — flash attention forward on the GPU, fp32 (twin of runtime/cpu/sdpa.cpp;
// the contract is runtime/kernels/sdpa.h, the op autograd/ops/sdpa.cpp).
//
// One block of 256 threads per (b, h, tile of 64 query rows). The block keeps its Q tile in
// shared memory and walks the keys in tiles of 64 (FlashAttention, Dao et al. 2022, §3.1):
//   S   = scale·Q·K_jᵀ + mask_j                    64 × 64 scores, 16 per thread, in registers
//   m'  = max(m, rowmax S)      c = exp(m − m')    running max per query row, and its rescale
//   P   = exp(S − m')           l = l·c + rowsum P  running sum of the un-dropped P
//   O   = O·c + (z ∘ P)·V_j                        O in registers; P goes through shared memory
// then O /= l, written straight into the (B, T, NH, HS) layout of the output, and (m, l) into
// stats for the backward. The (B, NH, T, T) scores never exist: per block, one 64 × 64 tile.
// z is the dropout mask: the tile's decisions, drawn from Philox with the CPU's counter layout
// by the whole block into shared memory before the tile (fill_dropout_tile).
//
// Why these sizes: 64 × 64 tiles give each thread a 4 × 4 block of S and a 4 × HS/16 block
// of O, so every float loaded from shared memory feeds 4 FMAs. The K and V tiles are double
// buffered (TileWalk, cuda/sdpa_tile.cuh): the next pair is copied asynchronously while this
// one is used. Shared memory: Q, 2 × (K, V), P = 102 KiB at HS = 64, 182 KiB at 128 — beyond the
// default 48 KB, so the launcher opts in with cudaFuncSetAttribute (as FlashAttention does on
// every call; it is not a stream operation, so CUDA-graph capture is unaffected).
// Fully masked rows (every score −inf) follow the CPU: the running max stays −inf, exps are
// taken against 0 instead (never −inf − (−inf)), l = 0, the output row is 0, stats (−inf, 0).
// SdpaMath::tf32x3 and ::tf32 run the tensor-core twin, cuda/sdpa_forward_tc.cu.
// Read next: cuda/sdpa_backward.cu; the tile helpers are cuda/sdpa_tile.cuh.
#include "cuda/check.h"
#include "cuda/sdpa_forward.cuh"
#include "cuda/stream.h"
#include "runtime/kernels/sdpa.h"

namespace mase::cuda {
namespace {

using namespace sdpa_fwd;

template <int HS>
__global__ void __launch_bounds__(kThreads) flash_forward(FwdArgs a) {
  extern __shared__ __align__(128) float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);  // (kBr, HS)   this block's queries
  float* Ps = Qs + kBr * kLd<HS>;               // (kBr, kBc)  z ∘ P of the current tile
  float* KV = Ps + kBr * kLdP;                  // 2 stages of (kBc, HS) K and V tiles
  uint8_t* keep = keep_tile<HS>(Qs, 5, 1);      // (kBr, kBc)  dropout decisions
  constexpr int kN = Cols<HS>::kN;

  const auto [bh, b, h, i0, tx, ty] = block_tile(a.Tq, a.NH);  // queries i0 .. i0 + 63
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
    const float *Ks = walk.a(t), *Vs = walk.b(t);

    float s[4][4] = {}, corr[4];
    mma_abt<HS>(s, Qs, Ks, ty, tx);  // s = Q·K_jᵀ, rows ty·4 + i, keys tx + 16·j
    online_softmax_tile(s, m, l, corr, a, keep, b, h, i0, j0, ty, tx);  // s = z ∘ P
    scale_rows<HS>(o, corr);
    grid_store(Ps, s, ty, tx);
    __syncthreads();  // the P tile is complete
    mma_ab<HS>(o, Ps, Vs, ty, tx);  // O += (z ∘ P)·V_j
  }

  write_output<HS>(o, m, l, a, bh, b, h, i0, ty, tx);
}

template <int HS>
void launch(const FwdArgs& a, int64_t BH) {
  constexpr size_t smem = smem_bytes<HS>(5, 1);  // Q, 2 stages of K and V; P
  MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_forward<HS>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t blocks = BH * ((a.Tq + kBr - 1) / kBr);
  MASE_CHECK(blocks < (int64_t(1) << 31), ShapeError, "[sdpa] too many query tiles: ", blocks);
  flash_forward<HS><<<unsigned(blocks), kThreads, smem, stream()>>>(a);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sdpa_forward(HeadsView<float> out, float* stats, HeadsView<const float> q,
                  HeadsView<const float> k, HeadsView<const float> v, MaskView<float> mask,
                  const SdpaSizes& n, float scale, const DropoutMask& drop, SdpaMath math) {
  MASE_CHECK(sdpa_supported(n), ShapeError, "[sdpa] the CUDA kernel takes HS = HSv in {32, 64, ",
             "128}, got HS ", n.HS, ", HSv ", n.HSv);
  MASE_CHECK(n.Tq < (int64_t(1) << 31) && n.Tk < (int64_t(1) << 31) && n.NH < (int64_t(1) << 31),
             ShapeError, "[sdpa] sizes beyond 2^31: Tq ", n.Tq, ", Tk ", n.Tk);
  if (n.B * n.NH * n.Tq == 0) return;
  const FwdArgs a{out, stats, q, k, v, mask, int(n.NH), int(n.Tq), int(n.Tk), scale, drop,
                  static_cast<float>(drop.scale)};
  if (math != SdpaMath::fp32)  // the tensor cores: cuda/sdpa_forward_tc.cu
    return launch_forward_tc(a, n.B * n.NH, int(n.HS), math == SdpaMath::tf32x3);
  switch (n.HS) {
    case 32: launch<32>(a, n.B * n.NH); break;
    case 64: launch<64>(a, n.B * n.NH); break;
    default: launch<128>(a, n.B * n.NH); break;
  }
}

}  // namespace mase::cuda
