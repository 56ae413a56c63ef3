// runtime/cpu/softmax.cpp — row-wise softmax / log_softmax kernels (see softmax.h).
//
// Each row is a few plain loops (max, exp, sum, scale); rows are spread over threads by
// for_each_row, one row never split, so results do not depend on the thread count. Sums run
// in double (rowwise.h). exp is a scalar libm call (glibc's vector exp needs -ffast-math),
// so these kernels are compute-bound, not memory-bound; vectorising exp is a later step.
#include "runtime/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// softmax (Log = false) or log_softmax (Log = true) of every row.
template <bool Log, class T>
void forward_rows(T* out, const T* inp, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* x = inp + r * cols;
    T* y = out + r * cols;
    const T m = row_max(x, cols);
    if (m == kNegInf<T>) {  // fully masked row: softmax 0s, log_softmax log 0 = −inf; not NaN
      std::fill(y, y + cols, Log ? kNegInf<T> : T(0));
      return;
    }
    for (int64_t c = 0; c < cols; ++c) y[c] = std::exp(x[c] - m);  // every exp in (0, 1]
    const double s = row_sum(cols, [&](int64_t c) { return double(y[c]); });
    if constexpr (Log) {  // y = (x − m) − log s; (x − m) first: exact when x is close to m
      const T log_s = static_cast<T>(std::log(s));
      for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) - log_s;
    } else {  // y = exp(x − m) / s
      const T inv = static_cast<T>(1.0 / s);
      for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
    }
  });
}

}  // namespace

template <class T>
void softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  forward_rows<false>(out, inp, rows, cols);
}

template <class T>
void log_softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  forward_rows<true>(out, inp, rows, cols);
}

template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T *dy = dout + r * cols, *y = out + r * cols;
    T* dx = dinp + r * cols;
    // dx = y · (dy − Σ dy·y)
    const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]) * y[c]; }));
    for (int64_t c = 0; c < cols; ++c) dx[c] = y[c] * (dy[c] - s);
  });
}

template <class T>
void log_softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T *dy = dout + r * cols, *y = out + r * cols;
    T* dx = dinp + r * cols;
    // dx = dy − exp(y) · Σ dy
    const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]); }));
    for (int64_t c = 0; c < cols; ++c) dx[c] = dy[c] - std::exp(y[c]) * s;
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
