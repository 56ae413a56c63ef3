// runtime/kernels/cross_entropy.h — fused log-softmax + negative log-likelihood over rows of
// logits. Math and conventions: autograd/ops/cross_entropy.cpp.
//
// logits and dlogits are packed (N, C); targets, losses and lse are (N); loss and dloss are
// one element. A row whose target == ignore_index has loss 0 and gradient 0; `count` is the
// number of the other rows (the op validates the targets and counts them).
//
// The contract of the cross_entropy kernels: both backends' signatures side by side, implemented by
// runtime/cpu/cross_entropy.cpp (mase::cpu, templates over float and double) and cuda/cross_entropy.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// lse[r] = log Σ_c exp(logits[r, c]), losses[r] = lse[r] − logits[r, targets[r]] (0 when
// ignored), loss[0] = Σ_r losses[r] / count (0 when count == 0).
template <class T>
void cross_entropy_forward(T* loss, T* losses, T* lse, const T* logits, const int32_t* targets,
                           int64_t N, int64_t C, int64_t ignore_index, int64_t count);

// dlogits[r, c] = (exp(logits[r, c] − lse[r]) − [c == targets[r]])·dloss[0]/count, 0 for
// ignored rows (and everywhere when count == 0).
template <class T>
void cross_entropy_backward(T* dlogits, const T* dloss, const T* logits, const T* lse,
                            const int32_t* targets, int64_t N, int64_t C, int64_t ignore_index,
                            int64_t count);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/cross_entropy.cu ----
// One difference from the CPU: `count` lives on the device. Counting the targets on the host
// would copy them back, a host sync in the middle of every training step (and a step with a
// sync cannot be captured as a CUDA graph), so the GPU counts and checks them itself.
namespace mase::cuda {

// count[0] = the rows whose target is not ignore_index, or −1 when a target is outside
// [0, C) (and not ignored): the loss is then NaN and the gradient 0. One block.
MASE_CUDA_FN(void, cross_entropy_count, (int32_t* count, const int32_t* targets, int64_t N,
                                         int64_t C, int64_t ignore_index))
MASE_CUDA_FN(void, cross_entropy_forward, (float* loss, float* losses, float* lse,
                                           const float* logits, const int32_t* targets, int64_t N,
                                           int64_t C, int64_t ignore_index, const int32_t* count))
MASE_CUDA_FN(void, cross_entropy_backward, (float* dlogits, const float* dloss,
                                            const float* logits, const float* lse,
                                            const int32_t* targets, int64_t N, int64_t C,
                                            int64_t ignore_index, const int32_t* count))

}  // namespace mase::cuda
