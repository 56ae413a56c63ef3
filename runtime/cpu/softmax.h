// runtime/cpu/softmax.h — softmax and log_softmax over the last dim (twin: cuda/softmax.h).
//
// Every tensor here is packed (rows, cols): the op (autograd/ops/softmax.cpp) flattens all
// leading dims into rows. A row whose entries are all -inf (a fully masked attention row)
// gives softmax 0s and log_softmax -infs, never NaN; see the op for why.
#pragma once
#include <cstdint>

namespace mase::cpu {

// out = exp(inp - max) / Σ exp(inp - max), row by row.
template <class T>
void softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols);
// dinp = out · (dout - Σ dout·out), row by row.
template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols);

// out = inp - max - log Σ exp(inp - max), row by row.
template <class T>
void log_softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols);
// dinp = dout - exp(out) · Σ dout, row by row.
template <class T>
void log_softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols);

}  // namespace mase::cpu
