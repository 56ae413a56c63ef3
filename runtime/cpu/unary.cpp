// runtime/cpu/unary.cpp — elementwise math functions, parallel over chunks (see unary.h).
// With -fno-math-errno and AVX2 the compiler vectorises exp/log/tanh through glibc's libmvec.
#include "runtime/cpu/unary.h"

#include <cmath>

#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void unary_forward(UnaryOp op, T* out, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    switch (op) {
      case UnaryOp::neg: for (int64_t i = lo; i < hi; ++i) out[i] = -x[i]; break;
      case UnaryOp::exp: for (int64_t i = lo; i < hi; ++i) out[i] = std::exp(x[i]); break;
      case UnaryOp::log: for (int64_t i = lo; i < hi; ++i) out[i] = std::log(x[i]); break;
      case UnaryOp::sqrt: for (int64_t i = lo; i < hi; ++i) out[i] = std::sqrt(x[i]); break;
      case UnaryOp::tanh: for (int64_t i = lo; i < hi; ++i) out[i] = std::tanh(x[i]); break;
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
