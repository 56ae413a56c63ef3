// runtime/kernels/embedding.h — row gather and its scatter-add backward.
// The op and its math are in autograd/ops/embedding.cpp. Ids are trusted here: the op has
// already checked that each lies in [0, V).
//
// The contract of the embedding kernels: both backends' signatures side by side, implemented by
// runtime/cpu/embedding.cpp (mase::cpu, templates over float and double) and cuda/embedding.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

// out (N, C): out[n, :] = weight[ids[n], :]; ids (N) i32, weight (V, C) packed.
template <class T>
void embedding_forward(T* out, const int32_t* ids, const T* weight, int64_t N, int64_t C);

// dweight (V, C) += scatter of dout (N, C): dweight[ids[n], :] += dout[n, :] for n = 0..N-1, in
// that order for every column, so the result does not depend on the thread count.
template <class T>
void embedding_backward(T* dweight, const T* dout, const int32_t* ids, int64_t N, int64_t C);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/embedding.cu ----
// The ids are not checked on the host for CUDA tensors (that would copy them back: a host
// sync in every forward), so the kernels guard themselves: an id outside [0, V) gives a NaN
// row in forward and adds nothing in backward (V is the table's row count).
namespace mase::cuda {

MASE_CUDA_FN(void, embedding_forward, (float* out, const int32_t* ids, const float* weight,
                                       int64_t N, int64_t C, int64_t V))
MASE_CUDA_FN(void, embedding_backward, (float* dweight, const float* dout, const int32_t* ids,
                                        int64_t N, int64_t C, int64_t V))

}  // namespace mase::cuda
