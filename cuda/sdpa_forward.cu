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
// z is the dropout mask, drawn per element from Philox with the CPU's counter layout.
//
// Why these sizes: 64 × 64 tiles give each thread a 4 × 4 block of S and a 4 × HS/16 block
// of O, so every float loaded from shared memory feeds 4 FMAs; the shared memory is
// Q, K, V tiles + the P tile (70 KB at HS = 64, 119 KB at 128 — beyond the default 48 KB,
// so the launcher opts in with cudaFuncSetAttribute, as FlashAttention does on every call).
// Fully masked rows (every score −inf) follow the CPU: the running max stays −inf, exps are
// taken against 0 instead (never −inf − (−inf)), l = 0, the output row is 0, stats (−inf, 0).
// Read next: cuda/sdpa_backward.cu; the tile helpers are cuda/sdpa_tile.cuh.
#include "cuda/check.h"
#include "cuda/sdpa_tile.cuh"
#include "cuda/stream.h"
#include "runtime/kernels/sdpa.h"

namespace mase::cuda {
namespace {

using namespace sdpa_tile;

struct FwdArgs {
  HeadsView<float> out;
  float* stats;  // (B, NH, Tq, 2) packed: (m, l) per query row
  HeadsView<const float> q, k, v;
  MaskView<float> mask;
  int NH, Tq, Tk;
  float scale;
  DropoutMask drop;
  float drop_scale;  // drop.scale rounded to float, as the CPU's f32 kernel rounds it
};

template <int HS>
__global__ void __launch_bounds__(kThreads) flash_forward(FwdArgs a) {
  extern __shared__ float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);  // (kBr, HS)   this block's queries
  float* Ks = Qs + kBr * kLd<HS>;               // (kBc, HS)   the current key tile
  float* Vs = Ks + kBc * kLd<HS>;               // (kBc, HS)   its values
  float* Ps = Vs + kBc * kLd<HS>;               // (kBr, kBc)  z ∘ P of the current tile
  constexpr int kN = Cols<HS>::kN;

  const auto [bh, b, h, i0, tx, ty] = block_tile(a.Tq, a.NH);  // queries i0 .. i0 + 63
  load_rows<HS, kBr>(Qs, head_row(a.q, b, h, i0), a.q.st, a.Tq - i0);

  float m[4], l[4], o[4][kN];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int u = 0; u < kN; ++u) o[i][u] = 0.f;
  }

  for (int j0 = 0; j0 < a.Tk; j0 += kBc) {
    __syncthreads();  // every thread is done with the previous Ks, Vs, Ps
    load_rows<HS, kBc>(Ks, head_row(a.k, b, h, j0), a.k.st, a.Tk - j0);
    load_rows<HS, kBc>(Vs, head_row(a.v, b, h, j0), a.v.st, a.Tk - j0);
    __syncthreads();  // the tiles (and, the first time, Qs) are in shared memory

    float s[4][4] = {};
    mma_abt<HS>(s, Qs, Ks, ty, tx);  // s = Q·K_jᵀ, rows ty·4 + i, keys tx + 16·j
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = i0 + ty * 4 + i;  // query row (≥ Tq: a zero row of the last tile)
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = j0 + tx + 16 * j;  // key
        if (c >= a.Tk) s[i][j] = -INFINITY;  // past the last key: weight 0
        else s[i][j] = s[i][j] * a.scale + (r < a.Tq ? mask_at(a.mask, b, h, r, c) : 0.f);
        mx = fmaxf(mx, s[i][j]);
      }
      const float m_new = fmaxf(m[i], max16(mx));
      const float shift = m_new == -INFINITY ? 0.f : m_new;  // all −inf so far: exps are 0
      const float corr = __expf(m[i] - shift);               // m = −inf: 0
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[i][j] = __expf(s[i][j] - shift);  // P, un-dropped
        rs += s[i][j];
      }
      l[i] = l[i] * corr + sum16(rs);
      m[i] = m_new;
#pragma unroll
      for (int u = 0; u < kN; ++u) o[i][u] *= corr;
      if (a.drop.on && r < a.Tq) {
        const uint64_t row_e = (uint64_t(bh) * a.Tq + r) * uint64_t(a.Tk);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int c = j0 + tx + 16 * j;
          if (c < a.Tk) s[i][j] *= dropout_factor(a.drop, a.drop_scale, row_e + c);
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) Ps[(ty * 4 + i) * kLdP + tx + 16 * j] = s[i][j];
    }
    __syncthreads();  // the P tile is complete
    mma_ab<HS>(o, Ps, Vs, ty, tx);  // O += (z ∘ P)·V_j
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    if (r >= a.Tq) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;  // l = 0: attends to nothing, output 0
    float* orow = head_row(a.out, b, h, r);
#pragma unroll
    for (int u = 0; u < kN; ++u) orow[Cols<HS>::col(tx, u)] = o[i][u] * inv;
    if (tx == 0) {
      a.stats[2 * (bh * a.Tq + r)] = m[i];
      a.stats[2 * (bh * a.Tq + r) + 1] = l[i];
    }
  }
}

template <int HS>
void launch(const FwdArgs& a, int64_t BH) {
  constexpr size_t smem = smem_bytes<HS>(3, 1);
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
                  const SdpaSizes& n, float scale, const DropoutMask& drop) {
  MASE_CHECK(sdpa_supported(n), ShapeError, "[sdpa] the CUDA kernel takes HS = HSv in {32, 64, ",
             "128}, got HS ", n.HS, ", HSv ", n.HSv);
  MASE_CHECK(n.Tq < (int64_t(1) << 31) && n.Tk < (int64_t(1) << 31) && n.NH < (int64_t(1) << 31),
             ShapeError, "[sdpa] sizes beyond 2^31: Tq ", n.Tq, ", Tk ", n.Tk);
  if (n.B * n.NH * n.Tq == 0) return;
  const FwdArgs a{out, stats, q, k, v, mask, int(n.NH), int(n.Tq), int(n.Tk), scale, drop,
                  static_cast<float>(drop.scale)};
  switch (n.HS) {
    case 32: launch<32>(a, n.B * n.NH); break;
    case 64: launch<64>(a, n.B * n.NH); break;
    default: launch<128>(a, n.B * n.NH); break;
  }
}

}  // namespace mase::cuda
