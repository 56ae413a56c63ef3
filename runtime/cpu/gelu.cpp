// runtime/cpu/gelu.cpp — exact GELU, parallel over chunks (see gelu.h and autograd/ops/gelu.cpp).
//
// Φ(x) = ½(1 + erf(x/√2)) is computed as ½·erfc(−x/√2): the same number, but for x ≪ 0,
// 1 + erf(x/√2) subtracts two nearly equal numbers and loses every digit, while erfc returns
// the tiny tail directly. erfc and exp are scalar libm calls here (glibc declares its vector
// versions only under -ffast-math), which makes GELU compute-bound: ~20 ns an element.
#include "runtime/cpu/gelu.h"

#include <cmath>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1/√2
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/√(2π)

}  // namespace

template <class T>
void gelu_forward(T* out, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = x[i] * T(0.5) * std::erfc(-x[i] * T(kInvSqrt2));
  });
}

template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T cdf = T(0.5) * std::erfc(-x[i] * T(kInvSqrt2));        // Φ(x)
      const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x[i] * x[i]);  // φ(x)
      dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
  });
}

template void gelu_forward<float>(float*, const float*, int64_t);
template void gelu_forward<double>(double*, const double*, int64_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t);
template void gelu_backward<double>(double*, const double*, const double*, int64_t);

}  // namespace mase::cpu
