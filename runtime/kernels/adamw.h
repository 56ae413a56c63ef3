// runtime/kernels/adamw.h — the fused AdamW update: one pass over p, grad, m, v.
//
// The optimizer (train/adamw.cpp) turns its hyper-parameters and the step number t into the
// few scalars below, once per parameter tensor; the kernel then updates every element with
//   p ← p · decay                       decay     = 1 − lr·wd          (decoupled weight decay)
//   m ← m + (1 − β1)·(g − m)            (= β1·m + (1 − β1)·g, PyTorch's lerp)
//   v ← β2·v + (1 − β2)·g²
//   p ← p − step_size · m / (√v / bc2_sqrt + eps)
//                                       step_size = lr / (1 − β1^t),  bc2_sqrt = √(1 − β2^t)
// which is torch.optim.AdamW's update, in its order and with its epsilon placement (eps is
// added after the bias correction of √v). Reading 4 and writing 3 values per element — 28
// bytes in f32 — is the whole cost: the loop is memory-bound, so fusing it (instead of ~8
// tensor ops, each a full pass) is what makes it fast. The unfused meaning is
// train::adamw_step_reference in train/adamw.h.
//
// The contract of the adamw kernels: both backends' signatures side by side, implemented by
// runtime/cpu/adamw.cpp (mase::cpu, templates over float and double) and cuda/adamw.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase {
// The per-tensor scalars of one AdamW step (computed in double by the caller).
struct AdamWScalars {
  double decay;      // 1 − lr·weight_decay
  double beta1;      // β1
  double beta2;      // β2
  double eps;        // ε
  double step_size;  // lr / (1 − β1^t)
  double bc2_sqrt;   // √(1 − β2^t)
};
}  // namespace mase

namespace mase::cpu {

// In place over n packed elements: param, exp_avg (m) and exp_avg_sq (v) updated from grad.
template <class T>
void adamw_step(T* param, T* exp_avg, T* exp_avg_sq, const T* grad, const AdamWScalars& s,
                int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/adamw.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, adamw_step, (float* param, float* exp_avg, float* exp_avg_sq,
                                const float* grad, const AdamWScalars& s, int64_t n))

}  // namespace mase::cuda
