// runtime/cpu/adamw.cpp — the fused AdamW update (math in adamw.h; twin: cuda/adamw.cu).
//
// The inner loop has no branches and no calls (std::sqrt becomes vsqrtps with
// -fno-math-errno), and its four arrays are declared __restrict, so GCC vectorises it to
// 8 floats per AVX2 instruction. Chunks of kGrainElems go to the thread pool; each element
// is independent, so the result does not depend on the number of threads.
#include "runtime/kernels/adamw.h"

#include <cmath>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

template <class T>
void adamw_run(T* __restrict p, T* __restrict m, T* __restrict v, const T* __restrict g,
               const AdamWScalars& s, int64_t n) {
  // the scalars in T once, so the loop is pure T arithmetic (as PyTorch's CPU kernel)
  const T decay = static_cast<T>(s.decay), b2 = static_cast<T>(s.beta2);
  const T one_minus_b1 = static_cast<T>(1.0 - s.beta1);
  const T one_minus_b2 = static_cast<T>(1.0 - s.beta2);
  const T eps = static_cast<T>(s.eps), step_size = static_cast<T>(s.step_size);
  const T bc2_sqrt = static_cast<T>(s.bc2_sqrt);
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i];
    const T mi = m[i] + one_minus_b1 * (gi - m[i]);    // m ← lerp(m, g, 1 − β1)
    const T vi = b2 * v[i] + one_minus_b2 * gi * gi;   // v ← β2 v + (1 − β2) g²
    const T denom = std::sqrt(vi) / bc2_sqrt + eps;    // √v̂ + ε
    p[i] = p[i] * decay - step_size * (mi / denom);    // p ← p(1 − lr·wd) − lr·m̂/(√v̂ + ε)
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

template <class T>
void adamw_step(T* param, T* exp_avg, T* exp_avg_sq, const T* grad, const AdamWScalars& s,
                int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    adamw_run(param + lo, exp_avg + lo, exp_avg_sq + lo, grad + lo, s, hi - lo);
  });
}

template void adamw_step<float>(float*, float*, float*, const float*, const AdamWScalars&, int64_t);
template void adamw_step<double>(double*, double*, double*, const double*, const AdamWScalars&,
                                 int64_t);

}  // namespace mase::cpu
