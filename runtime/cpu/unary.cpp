// runtime/cpu/unary.cpp — elementwise math functions, parallel over chunks (see unary.h).
//
// Every case is a plain loop the compiler vectorises (8 floats per AVX2 instruction). For f32,
// exp and tanh use fast_math.h: std::exp on floats would be one scalar libm call per element
// (glibc's vector versions are only used under -ffast-math) and 5-40x slower than memory.
// f64 exists for gradient checks, where accuracy matters and speed does not: it keeps libm.
#include "runtime/kernels/unary.h"

#include <cmath>
#include <type_traits>

#include "runtime/cpu/fast_math.h"
#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void unary_forward(UnaryOp op, T* out, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    switch (op) {
      case UnaryOp::neg: for (int64_t i = lo; i < hi; ++i) out[i] = -x[i]; break;
      case UnaryOp::exp: for (int64_t i = lo; i < hi; ++i) out[i] = exp_of(x[i]); break;
      case UnaryOp::log: for (int64_t i = lo; i < hi; ++i) out[i] = std::log(x[i]); break;
      case UnaryOp::sqrt: for (int64_t i = lo; i < hi; ++i) out[i] = std::sqrt(x[i]); break;
      case UnaryOp::tanh: for (int64_t i = lo; i < hi; ++i) out[i] = tanh_of(x[i]); break;
      case UnaryOp::relu: for (int64_t i = lo; i < hi; ++i) out[i] = x[i] > T(0) ? x[i] : T(0); break;
    }
  });
}

template <class T>
void unary_backward(UnaryOp op, T* dx, const T* dy, const T* x, const T* y, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    switch (op) {
      case UnaryOp::neg: for (int64_t i = lo; i < hi; ++i) dx[i] = -dy[i]; break;
      case UnaryOp::exp: for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * y[i]; break;
      case UnaryOp::log: for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] / x[i]; break;
      case UnaryOp::sqrt: for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] / (T(2) * y[i]); break;
      case UnaryOp::tanh: for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * (T(1) - y[i] * y[i]); break;
      case UnaryOp::relu: for (int64_t i = lo; i < hi; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0); break;
    }
  });
}

template void unary_forward<float>(UnaryOp, float*, const float*, int64_t);
template void unary_forward<double>(UnaryOp, double*, const double*, int64_t);
template void unary_backward<float>(UnaryOp, float*, const float*, const float*, const float*, int64_t);
template void unary_backward<double>(UnaryOp, double*, const double*, const double*, const double*, int64_t);

}  // namespace mase::cpu
