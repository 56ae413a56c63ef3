// runtime/kernels/multi_tensor.h — one kernel launch over many tensors: the optimizer step, the
// gradient norm and clipping for every parameter of a model at once.
//
// Why: BERT-small has 73 parameter tensors (bert-base 201). Updating them one kernel each is
// 73 launches of a few µs of host time and, for the small ones (biases, LayerNorm weights:
// 512 floats), a few µs of GPU time that is all launch latency. A multi-tensor launch (NVIDIA
// apex's multi_tensor_apply) passes a table of tensors as the kernel's argument — up to
// kMultiTensorMax tensors and kMultiTensorBlocks blocks, within the 4 KB a kernel's arguments
// may take — and each block finds its (tensor, chunk) in the table. The host plans the
// launches (plan_multi_tensor below: plain C++, tested on the CPU); the kernels are in
// cuda/multi_tensor.cu.
//
// The kernels read their per-step scalars from the device, never from the host: the gradient
// norm is reduced on the GPU (multi_sum_squares + clip_finish) and the clip coefficient and
// the finite flag stay there for multi_scale and multi_adamw to read. So a step needs no host
// synchronisation, and a captured step (CUDA graphs) replays with fresh values.
//
// Determinism: the norm is a sum of fixed per-chunk partials (chunks of kMultiTensorChunk
// elements, in tensor order) added in a fixed order by one block: the same bits every run.
//
// Read next: cuda/multi_tensor.cu, train/adamw.cpp and train/clip_grad_norm.cpp (the callers).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/kernels/backend.h"

namespace mase {

constexpr int kMultiTensorMax = 36;       // tensors per launch
constexpr int kMultiTensorBlocks = 320;   // blocks (chunks) per launch
constexpr int64_t kMultiTensorChunk = 65536;  // elements per chunk (one block each)

// One launch: which tensors (indices into the caller's list) and which chunk each block does.
struct MultiTensorLaunch {
  std::vector<int32_t> tensors;       // caller's indices, at most kMultiTensorMax
  std::vector<uint8_t> block_tensor;  // per block: position in `tensors`
  std::vector<int32_t> block_chunk;   // per block: chunk of that tensor (elements chunk·kChunk ..)
  std::vector<int32_t> block_slot;    // per block: its global chunk index (the partials' order)
};

// The chunks of tensors with these sizes, packed into launches in order. A tensor larger than
// what is left of a launch continues in the next one. Empty tensors get no chunk.
inline std::vector<MultiTensorLaunch> plan_multi_tensor(const std::vector<int64_t>& sizes) {
  std::vector<MultiTensorLaunch> plan;
  int32_t slot = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const int64_t chunks = (sizes[t] + kMultiTensorChunk - 1) / kMultiTensorChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      if (plan.empty() || plan.back().block_chunk.size() == size_t(kMultiTensorBlocks) ||
          (plan.back().tensors.size() == size_t(kMultiTensorMax) &&
           plan.back().tensors.back() != int32_t(t)))
        plan.emplace_back();
      MultiTensorLaunch& l = plan.back();
      if (l.tensors.empty() || l.tensors.back() != int32_t(t)) l.tensors.push_back(int32_t(t));
      l.block_tensor.push_back(static_cast<uint8_t>(l.tensors.size() - 1));
      l.block_chunk.push_back(static_cast<int32_t>(c));
      l.block_slot.push_back(slot++);
    }
  }
  return plan;
}

// Total chunks of a plan (the length of the partials array of multi_sum_squares).
inline int64_t multi_tensor_chunks(const std::vector<MultiTensorLaunch>& plan) {
  int64_t n = 0;
  for (const MultiTensorLaunch& l : plan) n += static_cast<int64_t>(l.block_chunk.size());
  return n;
}

// The clip state a step keeps on the device (4 doubles): what clip_finish writes and
// multi_scale / multi_adamw read, plus the loss it was given (so the host reads both at once).
enum ClipState : int { kClipNorm = 0, kClipCoef = 1, kClipFinite = 2, kClipLoss = 3, kClipStateSize = 4 };

// AdamW's per-tensor scalars on the device, kAdamWSlotScalars floats per tensor (its index in
// the list): 1 − lr·wd, lr / (1 − β1^t), √(1 − β2^t) — they change every step (schedule, t).
enum AdamWSlot : int { kAdamWDecay = 0, kAdamWStepSize = 1, kAdamWBc2Sqrt = 2, kAdamWSlotScalars = 3 };
struct AdamWConstants {  // the same for every tensor and step
  float beta2, one_minus_beta1, one_minus_beta2, eps;
};

}  // namespace mase

// ---- CUDA: cuda/multi_tensor.cu (no CPU twin: on the CPU the per-tensor kernels are the
// same work, and runtime/cpu/{adamw,grad_norm}.cpp are these kernels' test oracles) ----
namespace mase::cuda {

// partials[slot] = Σ x² over each chunk of each tensor x (in double), for every launch of
// `plan` over the tensors xs[i] of n[i] elements.
MASE_CUDA_FN(void, multi_sum_squares, (double* partials, const std::vector<const float*>& xs,
                                       const std::vector<int64_t>& n,
                                       const std::vector<MultiTensorLaunch>& plan))
// state[norm] = √(Σ partials) summed in a fixed order; state[coef] = min(1, max_norm /
// (norm + 1e-6)) (1 when max_norm <= 0 or the norm is not finite); state[finite] = 1 when the
// norm and, if given, *loss are finite, else 0; state[loss] = *loss (NaN when not given).
// One block.
MASE_CUDA_FN(void, clip_finish, (double* state, const double* partials, int64_t count,
                                 double max_norm, const float* loss))
// x ← x · state[coef] for every tensor (nothing when the coefficient is 1).
MASE_CUDA_FN(void, multi_scale, (const std::vector<float*>& xs, const std::vector<int64_t>& n,
                                 const std::vector<MultiTensorLaunch>& plan, const double* state))
// The AdamW update of runtime/kernels/adamw.h for every tensor i: param[i], exp_avg[i],
// exp_avg_sq[i] from grad[i], with tensor i's scalars at slots[i·kAdamWSlotScalars]. When
// `state` is given and state[finite] == 0 nothing changes (a NaN/inf loss or gradient).
MASE_CUDA_FN(void, multi_adamw, (const std::vector<float*>& param,
                                 const std::vector<float*>& exp_avg,
                                 const std::vector<float*>& exp_avg_sq,
                                 const std::vector<const float*>& grad,
                                 const std::vector<int64_t>& n,
                                 const std::vector<MultiTensorLaunch>& plan, const float* slots,
                                 AdamWConstants c, const double* state))

}  // namespace mase::cuda
