// runtime/kernels/sdpa.h — fused scaled dot-product attention, forward and backward
// (flash-attention style: tiled, online softmax, recomputation in backward). The math and the
// op are in autograd/ops/sdpa.cpp; the CPU algorithm and its choices are in runtime/cpu/sdpa.cpp,
// the CUDA one (head sizes 32/64/128) in cuda/sdpa_forward.cu, cuda/sdpa_backward.cu and
// cuda/sdpa_backward_fused.cu, its tensor-core variants (SdpaMath below) in
// cuda/sdpa_forward_tc.cu and cuda/sdpa_backward_tc.cu.
//
// Every (B, NH, T, D) tensor here is a HeadsView: its last dim packed, the other three strided,
// so head-split views of (B, T, C) projections are read in place and the output can be written
// straight into (B, T, NH, HS) = (B, T, C) layout (no merge-heads copy).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/kernels/dropout.h"  // DropoutMask

namespace mase {

// Element (b, h, t, d) of a (B, NH, T, D) tensor is data[b·sb + h·sh + t·st + d].
template <class T>
struct HeadsView {
  T* data = nullptr;
  int64_t sb = 0, sh = 0, st = 0;
  T* row(int64_t b, int64_t h, int64_t t) const { return data + b * sb + h * sh + t * st; }
};

// An additive mask broadcast to (B, NH, Tq, Tk): element (b, h, i, j) is
// data[b·sb + h·sh + i·si + j·sj] (a stride is 0 where the mask is broadcast, e.g. a padding
// mask (B, 1, 1, Tk) has sh = si = 0). data == nullptr: no mask.
template <class T>
struct MaskView {
  const T* data = nullptr;
  int64_t sb = 0, sh = 0, si = 0, sj = 0;
};

struct SdpaSizes {
  int64_t B = 0, NH = 0, Tq = 0, Tk = 0, HS = 0, HSv = 0;  // q, k: HS wide; v, out: HSv wide
};

// The arithmetic of the CUDA kernels' tile products (the CPU kernel always computes in its T):
//   fp32    FMA on the CUDA cores, fp32 in and out (rung v2 of the ladder, docs/gpu-kernels.md);
//   tf32x3  tensor cores, each fp32 operand split into a TF32 head and a TF32 tail, three
//           products per pair (head·head + head·tail + tail·head): fp32-level accuracy, the
//           scheme of PyTorch's fp32 memory-efficient attention (CUTLASS's FastF32);
//   tf32    tensor cores, one TF32 product: 10-bit mantissas, relative errors ~1e-3 (what
//           torch.backends.cuda.matmul.allow_tf32 = True trades for speed).
enum class SdpaMath { fp32, tf32x3, tf32 };

// The process-wide choice for CUDA tensors, read by the sdpa op on each call (fp32 unless
// changed; mase-bench's gpu-sdpa suite times all three).
inline SdpaMath& sdpa_cuda_math() {
  static SdpaMath math = SdpaMath::fp32;
  return math;
}

// How the CUDA backward with SdpaMath::fp32 sums its gradients (cuda/sdpa_backward_fused.cu):
//   fused       one pass over the (query tile, key tile) pairs computes dK, dV and dQ from the
//               same recomputed P and dS (5 tile products a pair); a block walks a group of
//               key tiles of one head, so it alone adds into its dQ partial sums, and the
//               groups' sums are added in a fixed order: the same bits on every run. The default.
//   atomic      the same pass with FlashAttention-2's dQ: one block per key tile, each adding
//               its share of dQ with atomicAdd. Not deterministic (the last bits of dq change
//               from run to run with the order the blocks arrive in); select it explicitly.
//   two_kernel  the first version (cuda/sdpa_backward.cu): a dK/dV kernel and a dQ kernel,
//               each recomputing S and dP (7 tile products a pair); deterministic.
// The tensor-core maths (tf32x3, tf32) always run their two kernels (cuda/sdpa_backward_tc.cu).
enum class SdpaBackward { fused, atomic, two_kernel };

// The process-wide choice, read by the sdpa op at each forward (its backward uses the choice
// of its forward). mase-bench's gpu-sdpa suite times all three.
inline SdpaBackward& sdpa_cuda_backward() {
  static SdpaBackward alg = SdpaBackward::fused;
  return alg;
}

}  // namespace mase

namespace mase::cpu {

// The argument structs are shared by both backends (namespace mase); these keep the names
// cpu::HeadsView etc. that code written before the CUDA kernels may use.
using mase::HeadsView;
using mase::MaskView;
using mase::SdpaSizes;

// Attention-probability dropout (`drop`, runtime/kernels/dropout.h): probability (b, h, i, j) is
// kept iff word e = ((b·NH + h)·Tq + i)·Tk + j of the Philox stream (drop.seed, drop.offset)
// passes dropout_keep — the counter layout of dropout() on the packed (B, NH, Tq, Tk)
// probabilities, so sdpa and sdpa_reference drop the same entries for the same generator.
// Kept entries are scaled by drop.scale = 1/(1 − p); drop.on = false: no dropout.

// out = dropout(softmax(S))·v with S = scale·q·kᵀ + mask, and per query row the statistics
// backward recomputes P = exp(S − m) / l from: stats (B, NH, Tq, 2) packed holds m = max_j S_ij
// and l = Σ_j exp(S_ij − m); a row whose scores are all −inf has (−inf, 0) and output 0.
template <class T>
void sdpa_forward(HeadsView<T> out, T* stats, HeadsView<const T> q, HeadsView<const T> k,
                  HeadsView<const T> v, MaskView<T> mask, const SdpaSizes& n, T scale,
                  const DropoutMask& drop);

// dq, dk, dv from dout, given the forward's inputs, out and stats (dq, dk, dv are overwritten).
template <class T>
void sdpa_backward(HeadsView<T> dq, HeadsView<T> dk, HeadsView<T> dv, HeadsView<const T> dout,
                   HeadsView<const T> out, const T* stats, HeadsView<const T> q,
                   HeadsView<const T> k, HeadsView<const T> v, MaskView<T> mask,
                   const SdpaSizes& n, T scale, const DropoutMask& drop);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/sdpa_forward*.cu, cuda/sdpa_backward*.cu (float only) ----
namespace mase::cuda {

// The CUDA kernels are templates over the head size, compiled for these: q, k, v and out all
// HS wide (HSv == HS). Other shapes take the reference composition (autograd/ops/sdpa.cpp).
inline bool sdpa_supported(const SdpaSizes& n) {
  return n.HS == n.HSv && (n.HS == 32 || n.HS == 64 || n.HS == 128);
}

// The same contract as cpu::sdpa_forward, every pointer on the GPU, the products computed
// as `math` says.
MASE_CUDA_FN(void, sdpa_forward, (HeadsView<float> out, float* stats, HeadsView<const float> q,
                                  HeadsView<const float> k, HeadsView<const float> v,
                                  MaskView<float> mask, const SdpaSizes& n, float scale,
                                  const DropoutMask& drop, SdpaMath math))

// Floats of workspace sdpa_backward needs for these sizes and choices: B·NH·Tq (D_i = dO_i·O_i
// of every query row), plus, for SdpaBackward::fused, (G − 1)·B·NH·Tq·HS for the partial dQ
// sums of G ≤ 4 groups of key tiles (G depends on the GPU's size: ask, don't compute).
MASE_CUDA_FN(int64_t, sdpa_backward_workspace, (const SdpaSizes& n, SdpaMath math,
                                                SdpaBackward alg))

// The same contract as cpu::sdpa_backward, plus the workspace above (sdpa_backward_workspace
// floats), which the op allocates from the tensor allocator; `alg` as SdpaBackward says.
MASE_CUDA_FN(void, sdpa_backward, (HeadsView<float> dq, HeadsView<float> dk, HeadsView<float> dv,
                                   HeadsView<const float> dout, HeadsView<const float> out,
                                   const float* stats, HeadsView<const float> q,
                                   HeadsView<const float> k, HeadsView<const float> v,
                                   MaskView<float> mask, const SdpaSizes& n, float scale,
                                   const DropoutMask& drop, float* workspace, SdpaMath math,
                                   SdpaBackward alg))

}  // namespace mase::cuda
