// cuda/softmax.cu — softmax / log_softmax on the GPU (twin of runtime/cpu/softmax.cpp).
// One block per row: each thread strides over the row's columns, then the block reduces the
// max and the sum (block_reduce.cuh). Same math and the same fully-masked-row rule as the CPU.
#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/softmax.h"

namespace mase::cuda {
namespace {

// log = false: y = exp(x − m) / Σ exp(x − m);  log = true: y = (x − m) − log Σ exp(x − m)
__global__ void forward_kernel(float* out, const float* inp, int64_t cols, bool log) {
  const float* x = inp + blockIdx.x * cols;
  float* y = out + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
  m = block_max(m);
  if (m == -INFINITY) {  // fully masked row (the whole block takes this branch together)
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] = log ? -INFINITY : 0.f;
    return;
  }
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(x[c] - m);
  s = block_sum(s);
  if (log) {
    const float log_s = logf(s);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] = (x[c] - m) - log_s;
  } else {
    const float inv = 1.f / s;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] = expf(x[c] - m) * inv;
  }
}

// softmax: dx = y·(dy − Σ dy·y);  log_softmax: dx = dy − exp(y)·Σ dy
__global__ void backward_kernel(float* dinp, const float* dout, const float* out, int64_t cols,
                                bool log) {
  const int64_t base = blockIdx.x * cols;
  const float *dy = dout + base, *y = out + base;
  float* dx = dinp + base;
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += log ? dy[c] : dy[c] * y[c];
  s = block_sum(s);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[c] = log ? dy[c] - expf(y[c]) * s : y[c] * (dy[c] - s);
}

void launch_forward(float* out, const float* inp, int64_t rows, int64_t cols, bool log) {
  if (rows == 0 || cols == 0) return;
  forward_kernel<<<row_grid(rows), row_block_threads(cols), 0, stream()>>>(out, inp, cols, log);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void launch_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                     int64_t cols, bool log) {
  if (rows == 0 || cols == 0) return;
  backward_kernel<<<row_grid(rows), row_block_threads(cols), 0, stream()>>>(dinp, dout, out, cols, log);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void softmax_forward(float* out, const float* inp, int64_t rows, int64_t cols) {
  launch_forward(out, inp, rows, cols, false);
}
void softmax_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                      int64_t cols) {
  launch_backward(dinp, dout, out, rows, cols, false);
}
void log_softmax_forward(float* out, const float* inp, int64_t rows, int64_t cols) {
  launch_forward(out, inp, rows, cols, true);
}
void log_softmax_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                          int64_t cols) {
  launch_backward(dinp, dout, out, rows, cols, true);
}

}  // namespace mase::cuda
