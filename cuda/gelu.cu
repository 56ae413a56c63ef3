// cuda/gelu.cu — exact GELU and fused bias + GELU on the GPU (twin of runtime/cpu/gelu.cpp),
// one thread per element. The fused backward's dbias = Σ_rows dinp is the column sum of
// cuda/reduce.cu (outer 1, reduce rows, inner cols) run on dinp right after.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/reduce.h"

namespace mase::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;    // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1/√(2π)

// gelu(v) = v·Φ(v), Φ(v) = ½·erfc(−v/√2) (= ½(1 + erf(v/√2)) without the cancellation for v ≪ 0)
__device__ inline float gelu_of(float v) { return v * 0.5f * erfcf(-v * kInvSqrt2); }
// gelu'(v) = Φ(v) + v·φ(v), φ(v) = exp(−v²/2)/√(2π)
__device__ inline float gelu_grad_of(float v) {
  return 0.5f * erfcf(-v * kInvSqrt2) + v * kInvSqrt2Pi * expf(-0.5f * v * v);
}

__global__ void forward_kernel(float* out, const float* x, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gelu_of(x[i]);
}

__global__ void backward_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = dy[i] * gelu_grad_of(x[i]);
}

// out = gelu(x + bias), element i in column i % cols
__global__ void bias_forward_kernel(float* out, const float* x, const float* bias, int64_t n,
                                    int64_t cols) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gelu_of(x[i] + bias[i % cols]);
}

// dx = dy·gelu'(x + bias)
__global__ void bias_backward_kernel(float* dx, const float* dy, const float* x,
                                     const float* bias, int64_t n, int64_t cols) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = dy[i] * gelu_grad_of(x[i] + bias[i % cols]);
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) {
  if (n == 0) return;
  forward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(out, inp, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void gelu_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
  if (n == 0) return;
  backward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(dinp, dout, inp, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void bias_gelu_forward(float* out, const float* inp, const float* bias, int64_t rows,
                       int64_t cols) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  bias_forward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(out, inp, bias, n, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void bias_gelu_backward(float* dinp, float* dbias, const float* dout, const float* inp,
                        const float* bias, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (n > 0) {
    bias_backward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(dinp, dout, inp, bias, n, cols);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  sum_forward(dbias, dinp, 1, rows, cols);  // dbias = Σ_rows dinp
}

}  // namespace mase::cuda
