// cuda/grad_norm.cu — Σ x² in double on the GPU, as fixed per-block partial sums (twin of
// runtime/cpu/grad_norm.cpp; see runtime/kernels/grad_norm.h for why partials).
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/grad_norm.h"

namespace mase::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void sum_squares_kernel(double* partials, const float* __restrict__ x, int64_t n) {
  __shared__ double shared[kThreads];
  double acc = 0;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    const double xi = x[i];
    acc += xi * xi;
  }
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {  // fixed tree: deterministic
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

}  // namespace

void sum_squares_partials(double* partials, const float* x, int64_t n) {
  // n == 0 still writes zeros, so the caller's sum over every partial is right
  sum_squares_kernel<<<kSumSquaresBlocks, kThreads, 0, stream()>>>(partials, x, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
