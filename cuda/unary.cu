// cuda/unary.cu — elementwise math on the GPU (twin of runtime/cpu/unary.cpp).
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/unary.h"

namespace mase::cuda {
namespace {

__global__ void forward_kernel(UnaryOp op, float* out, const float* x, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  switch (op) {
    case UnaryOp::neg: out[i] = -v; break;
    case UnaryOp::exp: out[i] = expf(v); break;
    case UnaryOp::log: out[i] = logf(v); break;
    case UnaryOp::sqrt: out[i] = sqrtf(v); break;
    case UnaryOp::tanh: out[i] = tanhf(v); break;
    case UnaryOp::relu: out[i] = v > 0.f ? v : 0.f; break;
  }
}

__global__ void backward_kernel(UnaryOp op, float* dx, const float* dy, const float* x,
                                const float* y, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  switch (op) {
    case UnaryOp::neg: dx[i] = -dy[i]; break;
    case UnaryOp::exp: dx[i] = dy[i] * y[i]; break;
    case UnaryOp::log: dx[i] = dy[i] / x[i]; break;
    case UnaryOp::sqrt: dx[i] = dy[i] / (2.f * y[i]); break;
    case UnaryOp::tanh: dx[i] = dy[i] * (1.f - y[i] * y[i]); break;
    case UnaryOp::relu: dx[i] = x[i] > 0.f ? dy[i] : 0.f; break;
  }
}

}  // namespace

void unary_forward(UnaryOp op, float* out, const float* inp, int64_t n) {
  if (n == 0) return;
  forward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(op, out, inp, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void unary_backward(UnaryOp op, float* dinp, const float* dout, const float* inp, const float* out,
                    int64_t n) {
  if (n == 0) return;
  backward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(op, dinp, dout, inp, out, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
