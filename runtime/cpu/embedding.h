// runtime/cpu/embedding.h — row gather and its scatter-add backward (twin: cuda/embedding.h).
// The op and its math are in autograd/ops/embedding.cpp. Ids are trusted here: the op has
// already checked that each lies in [0, V).
#pragma once
#include <cstdint>

namespace mase::cpu {

// out (N, C): out[n, :] = weight[ids[n], :]; ids (N) i32, weight (V, C) packed.
template <class T>
void embedding_forward(T* out, const int32_t* ids, const T* weight, int64_t N, int64_t C);

// dweight (V, C) += scatter of dout (N, C): dweight[ids[n], :] += dout[n, :] for n = 0..N-1, in
// that order for every column, so the result does not depend on the thread count.
template <class T>
void embedding_backward(T* dweight, const T* dout, const int32_t* ids, int64_t N, int64_t C);

}  // namespace mase::cpu
