// cuda/gelu.cu — exact GELU on the GPU (twin of runtime/cpu/gelu.cpp), one thread per element.
#include "cuda/check.h"
#include "cuda/gelu.h"

namespace mase::cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;    // 1/√2
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1/√(2π)

// y = x·Φ(x), Φ(x) = ½·erfc(−x/√2) (= ½(1 + erf(x/√2)) without the cancellation for x ≪ 0)
__global__ void forward_kernel(float* out, const float* x, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[i] * 0.5f * erfcf(-x[i] * kInvSqrt2);
}

// dx = dy·(Φ(x) + x·φ(x)), φ(x) = exp(−x²/2)/√(2π)
__global__ void backward_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  const float cdf = 0.5f * erfcf(-v * kInvSqrt2);
  const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
  dx[i] = dy[i] * (cdf + v * pdf);
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t n) {
  if (n == 0) return;
  forward_kernel<<<(n + 255) / 256, 256>>>(out, inp, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void gelu_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
  if (n == 0) return;
  backward_kernel<<<(n + 255) / 256, 256>>>(dinp, dout, inp, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
