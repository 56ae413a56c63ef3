// cuda/sdpa_backward_fused.cu — flash attention backward in ONE pass over the tile pairs: dK, dV
// and dQ from the same recomputed P and dS (FlashAttention-2, Dao 2023, Algorithm 2). Rung v2b
// of the attention ladder; read cuda/sdpa_backward.cu (v2, two kernels) first.
//
// Why: the two-kernel backward recomputes S = Q·Kᵀ and dP = dO·Vᵀ in each kernel — 7 tile
// products per (query tile, key tile) pair where 5 are the maths (dV, dK, dQ, and the S, dP
// that P and dS need). Here a block keeps one key tile K_j, V_j in shared memory, walks the
// query tiles i, and for each pair computes S, dP -> P, dS once, then all three products:
//   dV_j += (z ∘ P)ᵀ·dO_i     dK_j += scale·dSᵀ·Q_i      (registers, for the whole walk)
//   dQ_i += scale·dS·K_j                                  (64 × HS partial sums, to memory)
// The catch is dQ: dQ_i gets one partial sum from every key tile, and different blocks own
// different key tiles. Two ways to add them up, chosen by SdpaBackward (runtime/kernels/sdpa.h):
//   * fused (deterministic, the default): a block owns a whole GROUP of key tiles of one head
//     (j = g, g + G, g + 2G, … for group g of G) and walks them one after the other, so only
//     it touches its dQ partial sums: it adds each pair's share with a plain load-add-store, in
//     a fixed order. Group 0 sums straight into dq; group g > 0 into its own (B, NH, Tq, HS)
//     slice of the workspace, and a last small kernel adds the slices to dq in the order
//     g = 1, 2, …: the same bits on every run. G is picked on the host so that B·NH·G blocks
//     fill whole waves of the GPU (G = 1 when B·NH blocks already do): memory (G − 1) × the
//     size of q, at most 3× (FlashAttention-2 does the same in its deterministic mode).
//   * atomic (FlashAttention-2's default, not deterministic): one block per key tile (G = the
//     number of key tiles: the most parallel), each pair's share added into dq (zeroed first)
//     with atomicAdd. Float addition is not associative and the order in which blocks arrive
//     changes from run to run, so the last bits of dq do too.
// Both are the same kernel: the template flag kAtomic picks the last step.
//
// Resources (sm_90, HS 64): 4 (64, HS) tiles (K, V, Q, dO) + 2 (64, 64) tiles (P, dS) + the
// dropout bytes = 106 KB of shared memory and at most 128 registers a thread, so TWO blocks
// share an SM (16 warps) where the two-kernel version's dK/dV kernel (140 KB, 196 registers)
// fits one: while one block waits at a barrier or for memory the other computes. The price of
// the smaller footprint is a single buffer for Q_i, dO_i: the copies of the next pair's tiles
// are issued as soon as this pair's dV and dK products are done with them, and travel while
// the dQ product runs (and while the other block computes).
#include <algorithm>
#include <cmath>

#include "cuda/check.h"
#include "cuda/sdpa_backward.cuh"
#include "cuda/stream.h"

namespace mase::cuda::sdpa_bwd {
namespace {

// Blocks an SM should hold: 2 where registers (≤ 128 a thread) and shared memory allow.
template <int HS>
constexpr int kFusedMinBlocks = HS <= 64 ? 2 : 1;
template <int HS>
constexpr size_t kFusedSmem = smem_bytes<HS>(4, 2);  // K, V, Q, dO; P, dS; dropout bytes

// The thread's 4 × Cols<HS>::kN elements of rows i0 + ty·4 + i (those < Tq) of a dQ view.
template <int HS>
__device__ inline void load_dq(float (&dq)[4][Cols<HS>::kN], const HeadsView<float>& v,
                               int64_t b, int64_t h, int i0, int Tq, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    const float* row = r < Tq ? head_row(v, b, h, r) : nullptr;
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) dq[i][u] = row ? row[Cols<HS>::col(tx, u)] : 0.f;
  }
}

template <int HS, bool kAtomic>
__device__ inline void store_dq(const HeadsView<float>& v, const float (&dq)[4][Cols<HS>::kN],
                                int64_t b, int64_t h, int i0, int Tq, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    if (r >= Tq) continue;
    float* row = head_row(v, b, h, r);
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) {
      if constexpr (kAtomic) atomicAdd(row + Cols<HS>::col(tx, u), dq[i][u]);
      else row[Cols<HS>::col(tx, u)] = dq[i][u];
    }
  }
}

// One block per (b, h, group g of key tiles): block x = bh·groups + g. `partials` holds groups
// − 1 packed (B, NH, Tq, HS) slices, `slice` floats apart (unused when kAtomic).
template <int HS, bool kAtomic>
__global__ void __launch_bounds__(kThreads, kFusedMinBlocks<HS>)
    flash_backward_fused(BwdArgs a, float* partials, int64_t slice, int groups) {
  constexpr int kT = kBr * kLd<HS>;  // floats of a (64, HS) tile
  extern __shared__ __align__(128) float4 smem4[];
  float* Ks = reinterpret_cast<float*>(smem4);  // (kBc, HS) this block's key tile
  float* Vs = Ks + kT;                          // (kBc, HS)
  float* Qs = Vs + kT;                          // (kBr, HS) the query tile of the pair
  float* dOs = Qs + kT;                         // (kBr, HS)
  float* Ps = dOs + kT;                         // (kBr, kBc) z ∘ P
  float* dSs = Ps + kBr * kLdP;                 // (kBr, kBc) scale·dS
  uint8_t* keep = keep_tile<HS>(Ks, 4, 2);      // (kBr, kBc) dropout decisions
  constexpr int kN = Cols<HS>::kN;

  const int64_t bh = blockIdx.x / groups, b = bh / a.NH, h = bh % a.NH;
  const int g = int(blockIdx.x % groups), tx = int(threadIdx.x % 16), ty = int(threadIdx.x / 16);
  const int nq = (a.Tq + kBr - 1) / kBr, nk = (a.Tk + kBc - 1) / kBc;
  // where this block's dQ partial sums go: dq itself (atomic, or group 0), else its slice
  const HeadsView<float> dqv =
      kAtomic || g == 0 ? a.dq
                        : HeadsView<float>{partials + (g - 1) * slice, int64_t(a.NH) * a.Tq * HS,
                                           int64_t(a.Tq) * HS, HS};
  auto load_query_tile = [&](int it) {  // Q_i, dO_i of query tile it, asynchronously
    const int i0 = it * kBr;
    load_rows_async<HS, kBr>(Qs, head_row(a.q, b, h, i0), a.q.st, a.Tq - i0);
    load_rows_async<HS, kBr>(dOs, head_row(a.dout, b, h, i0), a.dout.st, a.Tq - i0);
  };

  for (int jt = g; jt < nk; jt += groups) {  // this block's key tiles, one after the other
    const int j0 = jt * kBc;
    const bool first_key_tile = jt == g;  // dQ partial sums are stored, not added, the first time
    __syncthreads();  // every thread is done with the previous key tile's Ks, Vs
    load_rows_async<HS, kBc>(Ks, head_row(a.k, b, h, j0), a.k.st, a.Tk - j0);
    load_rows_async<HS, kBc>(Vs, head_row(a.v, b, h, j0), a.v.st, a.Tk - j0);
    if (first_key_tile) load_query_tile(0);  // later: copied during the previous pair
    __pipeline_commit();

    float dk[4][kN] = {}, dv[4][kN] = {};
    for (int it = 0; it < nq; ++it) {
      const int i0 = it * kBr;
      if (a.drop.on) fill_dropout_tile(keep, a.drop, bh, a.Tq, a.Tk, i0, j0);
      __pipeline_wait_prior(0);
      __syncthreads();  // Q_i, dO_i (and K_j, V_j) have landed, the dropout bytes are written

      pair_p_ds<HS>(Ps, dSs, Qs, Ks, dOs, Vs, a, keep, bh, b, h, i0, j0, ty, tx);  // S, dP
      __syncthreads();  // the tiles of z ∘ P and scale·dS are complete

      float dq[4][kN];  // this pair's share of dQ_i, added to what earlier key tiles left
      if (kAtomic || first_key_tile) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int u = 0; u < kN; ++u) dq[i][u] = 0.f;
      } else {
        load_dq<HS>(dq, dqv, b, h, i0, a.Tq, ty, tx);  // in flight during the next two products
      }
      mma_atb<HS>(dv, Ps, dOs, ty, tx);  // dV_j += (z ∘ P)ᵀ·dO_i
      mma_atb<HS>(dk, dSs, Qs, ty, tx);  // dK_j += scale·dSᵀ·Q_i
      __syncthreads();                   // every thread is done with Qs, dOs: refill them
      const bool last = it + 1 == nq && jt + groups >= nk;
      if (!last) load_query_tile((it + 1) % nq);  // the next pair's (next key tile: tile 0)
      __pipeline_commit();
      mma_ab<HS>(dq, dSs, Ks, ty, tx);  // dQ_i += scale·dS·K_j
      store_dq<HS, kAtomic>(dqv, dq, b, h, i0, a.Tq, ty, tx);
    }
    write_dk_dv<HS>(a, dk, dv, b, h, j0, ty, tx);
  }
}

// dq(b, h, i, ·) += Σ_{g = 1}^{G−1} slice_g(b, h, i, ·), in that order. A block of 256 threads
// covers 256 / HS query rows (rows = B·NH·Tq < 2³¹, so 32-bit index arithmetic: 64-bit
// divisions cost ~100 instructions each, more than the element's memory traffic).
template <int HS>
__global__ void add_partials(HeadsView<float> dq, const float* partials, int64_t slice,
                             int groups, int NH, int Tq, int rows) {
  const int row = blockIdx.x * (kThreads / HS) + threadIdx.x / HS, d = threadIdx.x % HS;
  if (row >= rows) return;
  const int bh = row / Tq;
  float* p = head_row(dq, bh / NH, bh % NH, row % Tq) + d;
  const int64_t e = int64_t(row) * HS + d;  // the element in a packed slice
  float sum = *p;
  for (int g = 1; g < groups; ++g) sum += partials[(g - 1) * slice + e];
  *p = sum;
}

template <int HS, bool kAtomic>
void set_smem_attribute() {
  MASE_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_fused<HS, kAtomic>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(kFusedSmem<HS>)));
}

// Blocks of the fused kernel the GPU runs at once: SMs × blocks an SM holds (asked of the
// driver once per process, for the current device).
template <int HS>
int64_t resident_blocks() {
  static const int64_t blocks = [] {
    set_smem_attribute<HS, false>();
    int dev = 0, sms = 0, per_sm = 0;
    MASE_CUDA_CHECK(cudaGetDevice(&dev));
    MASE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    MASE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, flash_backward_fused<HS, false>, kThreads, kFusedSmem<HS>));
    return int64_t(std::max(sms, 1)) * std::max(per_sm, 1);
  }();
  return blocks;
}

template <int HS, bool kAtomic>
void launch(const BwdArgs& a, int64_t BH, int groups, float* partials) {
  const int64_t blocks = BH * groups;
  MASE_CHECK(blocks < (int64_t(1) << 31), ShapeError, "[sdpa] too many key tiles: ", blocks);
  set_smem_attribute<HS, kAtomic>();
  const int64_t slice = BH * a.Tq * HS;
  flash_backward_fused<HS, kAtomic>
      <<<unsigned(blocks), kThreads, kFusedSmem<HS>, stream()>>>(a, partials, slice, groups);
  MASE_CUDA_CHECK(cudaGetLastError());
  if (!kAtomic && groups > 1) {
    const int64_t rows = BH * a.Tq;
    MASE_CHECK(rows < (int64_t(1) << 31), ShapeError, "[sdpa] too many query rows: ", rows);
    constexpr int kRows = kThreads / HS;  // rows a block
    add_partials<HS><<<unsigned((rows + kRows - 1) / kRows), kThreads, 0, stream()>>>(
        a.dq, partials, slice, groups, a.NH, a.Tq, int(rows));
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

// Groups G of key tiles per head for the deterministic kernel: the G ≤ min(4, key tiles) whose
// B·NH·G blocks best fill whole waves of `resident` blocks, times how evenly the key tiles
// split into G groups; a larger G must win by 2% (it costs (G − 1) slices of memory).
int fused_groups(int64_t BH, int64_t key_tiles, int64_t resident) {
  int best = 1;
  double best_use = 0;
  for (int G = 1; G <= 4 && G <= key_tiles; ++G) {
    const double blocks = double(BH) * G, waves = std::ceil(blocks / double(resident));
    const double use = blocks / (waves * double(resident)) *
                       (double(key_tiles) / (G * std::ceil(double(key_tiles) / G)));
    if (G == 1 || use > best_use + 0.02) best = G, best_use = use;
  }
  return best;
}

int fused_groups(const SdpaSizes& n) {
  if (n.Tq == 0 || n.Tk == 0) return 1;
  const int64_t resident = n.HS == 32 ? resident_blocks<32>()
                           : n.HS == 64 ? resident_blocks<64>()
                                        : resident_blocks<128>();
  return fused_groups(n.B * n.NH, (n.Tk + kBc - 1) / kBc, resident);
}

void launch_backward_fused(const BwdArgs& a, int64_t BH, int HS, bool atomic, float* partials,
                           int groups) {
  const int key_tiles = (a.Tk + kBc - 1) / kBc;
  switch (HS) {
    case 32:
      atomic ? launch<32, true>(a, BH, key_tiles, partials) : launch<32, false>(a, BH, groups, partials);
      break;
    case 64:
      atomic ? launch<64, true>(a, BH, key_tiles, partials) : launch<64, false>(a, BH, groups, partials);
      break;
    default:
      atomic ? launch<128, true>(a, BH, key_tiles, partials)
             : launch<128, false>(a, BH, groups, partials);
      break;
  }
}

}  // namespace mase::cuda::sdpa_bwd
