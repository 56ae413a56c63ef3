// runtime/cpu/softmax.cpp — row-wise softmax / log_softmax kernels (see softmax.h).
//
// Each row is a few simple loops (max, exp, sum, scale) that the compiler vectorises; rows
// are spread over threads with parallel_for, one row never split, so results do not depend
// on the thread count. Sums run in double (row_reduce.h).
#include "runtime/cpu/softmax.h"

#include <cmath>
#include <limits>

#include "runtime/cpu/row_reduce.h"
#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* x = inp + r * cols;
      T* y = out + r * cols;
      const T m = row_max(x, cols);
      if (m == -std::numeric_limits<T>::infinity()) {  // fully masked row: 0s, not NaN
        for (int64_t c = 0; c < cols; ++c) y[c] = T(0);
        continue;
      }
      for (int64_t c = 0; c < cols; ++c) y[c] = std::exp(x[c] - m);
      const T inv = static_cast<T>(1.0 / row_sum(cols, [&](int64_t c) { return double(y[c]); }));
      for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
    }
  });
}

template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* dy = dout + r * cols;
      const T* y = out + r * cols;
      T* dx = dinp + r * cols;
      // dx = y · (dy − Σ dy·y)
      const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]) * y[c]; }));
      for (int64_t c = 0; c < cols; ++c) dx[c] = y[c] * (dy[c] - s);
    }
  });
}

template <class T>
void log_softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* x = inp + r * cols;
      T* y = out + r * cols;
      const T m = row_max(x, cols);
      if (m == -std::numeric_limits<T>::infinity()) {  // fully masked row: log 0 = -inf
        for (int64_t c = 0; c < cols; ++c) y[c] = m;
        continue;
      }
      // the exps go to y first (a scratch row that is overwritten just below)
      for (int64_t c = 0; c < cols; ++c) y[c] = std::exp(x[c] - m);
      const T log_s = static_cast<T>(std::log(row_sum(cols, [&](int64_t c) { return double(y[c]); })));
      for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) - log_s;  // (x − m) first: precise for large m
    }
  });
}

template <class T>
void log_softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* dy = dout + r * cols;
      const T* y = out + r * cols;
      T* dx = dinp + r * cols;
      // dx = dy − exp(y) · Σ dy
      const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]); }));
      for (int64_t c = 0; c < cols; ++c) dx[c] = dy[c] - std::exp(y[c]) * s;
    }
  });
}

template void softmax_forward<float>(float*, const float*, int64_t, int64_t);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t);
template void log_softmax_forward<float>(float*, const float*, int64_t, int64_t);
template void log_softmax_forward<double>(double*, const double*, int64_t, int64_t);
template void log_softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void log_softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace mase::cpu
