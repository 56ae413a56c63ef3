// cuda/adamw.cu — the fused AdamW update on the GPU (twin of runtime/cpu/adamw.cpp; the math
// is in runtime/kernels/adamw.h). One thread per element, in a grid-stride loop: the kernel is
// memory-bound (28 bytes per element), so all that matters is coalesced loads and stores.
#include "runtime/kernels/adamw.h"
#include "cuda/check.h"
#include "cuda/stream.h"

#include <algorithm>

namespace mase::cuda {
namespace {

struct Scalars {  // AdamWScalars in f32, as the CPU kernel uses them for float
  float decay, b2, one_minus_b1, one_minus_b2, eps, step_size, bc2_sqrt;
};

__global__ void adamw_kernel(float* __restrict__ p, float* __restrict__ m, float* __restrict__ v,
                             const float* __restrict__ g, Scalars s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = m[i] + s.one_minus_b1 * (gi - m[i]);   // m ← lerp(m, g, 1 − β1)
    const float vi = s.b2 * v[i] + s.one_minus_b2 * gi * gi; // v ← β2 v + (1 − β2) g²
    const float denom = sqrtf(vi) / s.bc2_sqrt + s.eps;      // √v̂ + ε
    p[i] = p[i] * s.decay - s.step_size * (mi / denom);      // p ← p(1 − lr·wd) − lr·m̂/(√v̂ + ε)
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void adamw_step(float* param, float* exp_avg, float* exp_avg_sq, const float* grad,
                const AdamWScalars& s, int64_t n) {
  if (n == 0) return;
  Scalars f{static_cast<float>(s.decay),          static_cast<float>(s.beta2),
            static_cast<float>(1.0 - s.beta1),    static_cast<float>(1.0 - s.beta2),
            static_cast<float>(s.eps),            static_cast<float>(s.step_size),
            static_cast<float>(s.bc2_sqrt)};
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 65536);
  adamw_kernel<<<static_cast<int>(blocks), threads, 0, stream()>>>(param, exp_avg, exp_avg_sq, grad, f, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
