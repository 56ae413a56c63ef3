// runtime/kernels/softmax.h — softmax and log_softmax over the last dim.
//
// Every tensor here is packed (rows, cols): the op (autograd/ops/softmax.cpp) flattens all
// leading dims into rows. A row whose entries are all -inf (a fully masked attention row)
// gives softmax 0s and log_softmax -infs, never NaN; see the op for why.
//
// The contract of the softmax kernels: both backends' signatures side by side, implemented by
// runtime/cpu/softmax.cpp (mase::cpu, templates over float and double) and cuda/softmax.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

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

// ---- the CUDA twin: cuda/softmax.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, softmax_backward, (float* dinp, const float* dout, const float* out,
                                      int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_forward, (float* out, const float* inp, int64_t rows, int64_t cols))
MASE_CUDA_FN(void, log_softmax_backward, (float* dinp, const float* dout, const float* out,
                                          int64_t rows, int64_t cols))

// ---- the kernel ladder (cuda/softmax_ladder.cu; timed by bench/bench_gpu_softmax.cpp) ----
// Version v of the softmax forward, kept to teach what each step buys: 1 = one block per row,
// three sweeps of global memory (max, Σ exp, write); 2 = one block per row, online (max, sum)
// in one sweep, then the write; 3 = one block per row, the row cached in shared memory (one
// read); 4 = one warp per row, the row in registers. softmax_forward runs 4, else 3, else 2.
constexpr int kSoftmaxVersions = 4;
inline bool softmax_version_applies(int version, int64_t cols) {
  // the row fits in the 47 KB of shared memory the kernels use (cuda/softmax_rows.cuh,
  // kCacheBytes: 48 KB less room for the kernel's own static shared memory)
  if (version == 3) return cols * 4 <= 47 * 1024;
  if (version == 4) return cols <= 1024;           // 32 registers a lane
  return version == 1 || version == 2;
}
MASE_CUDA_FN(void, softmax_forward_version, (int version, float* out, const float* inp,
                                             int64_t rows, int64_t cols))

}  // namespace mase::cuda
