// runtime/cpu/layer_norm.cpp — row-wise layer norm kernels, plain and fused with BERT's
// bias + dropout + residual add (see layer_norm.h, and autograd/ops/layer_norm.cpp for the math).
//
// Forward: parallel over rows; mean and variance in double, two passes (Σx, then Σ(x − mean)²:
// the one-pass E[x²] − E[x]² cancels catastrophically when |mean| ≫ std). The fused forward
// first builds the row it normalises, hidden = dropout(inp + inp_bias) + residual, in pieces
// of kPiece elements (the dropout multipliers of a piece sit in a stack buffer), so the row is
// in L1 when the two sums and the output pass read it again.
// Backward: dinp is per row, but dweight/dbias (and the fused op's dinp_bias) are sums over
// all rows (column sums), taken while each row is in cache with rowwise.h's
// rows_with_column_sums: deterministic on any number of threads, no allocation.
// The plain kernels are the fused ones with nothing to add: the backward is literally the
// same function; the forward skips building `hidden` and normalises inp in place of it.
#include "runtime/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

constexpr int64_t kPiece = 256;

// y = (x − mean)·rstd·weight + bias for one row of `cols`; stores the row's mean and rstd.
template <class T>
void normalize_row(T* __restrict y, T& mean, T& rstd, const T* __restrict x, const T* weight,
                   const T* bias, int64_t cols, double eps) {
  const double mu = row_sum8(cols, [&](int64_t c) { return x[c]; }) / double(cols);
  const double var = row_sum8(cols, [&](int64_t c) {
    const double d = double(x[c]) - mu;
    return d * d;
  }) / double(cols);
  const T m = static_cast<T>(mu), s = static_cast<T>(1.0 / std::sqrt(var + eps));
  mean = m;
  rstd = s;
  for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
}

// v[j] = f[j]·v[j] where f is a dropout multiplier (scale or 0); a select, so a dropped inf or
// NaN gives 0 as the dropout op does.
template <class T>
void apply_factors(T* __restrict v, const T* __restrict f, int64_t n) {
  for (int64_t j = 0; j < n; ++j) v[j] = f[j] == T(0) ? T(0) : v[j] * f[j];
}

}  // namespace

template <class T>
void layer_norm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias,
                        int64_t rows, int64_t cols, double eps) {
  for_each_row(rows, cols, [&](int64_t r) {
    normalize_row(out + r * cols, mean[r], rstd[r], inp + r * cols, weight, bias, cols, eps);
  });
}

template <class T>
void dropout_add_layer_norm_forward(T* out, T* hidden, T* mean, T* rstd, const T* inp,
                                    const T* inp_bias, const T* residual, const T* weight,
                                    const T* bias, int64_t rows, int64_t cols, double eps,
                                    const DropoutMask& mask) {
  for_each_row(rows, cols, [&](int64_t r) {
    T* __restrict h = hidden + r * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += kPiece) {
      const int64_t n = std::min(kPiece, cols - c0);
      const T* __restrict x = inp + r * cols + c0;
      const T* __restrict res = residual + r * cols + c0;
      T* __restrict hp = h + c0;
      if (inp_bias) for (int64_t j = 0; j < n; ++j) hp[j] = x[j] + inp_bias[c0 + j];
      else std::copy(x, x + n, hp);
      if (mask.on) {
        T f[kPiece];
        dropout_factors(f, r * cols + c0, n, mask);
        apply_factors(hp, f, n);
      }
      for (int64_t j = 0; j < n; ++j) hp[j] += res[j];
    }
    normalize_row(out + r * cols, mean[r], rstd[r], h, weight, bias, cols, eps);
  });
}

template <class T>
void dropout_add_layer_norm_backward(T* dinp, T* dresidual, T* dinp_bias, T* dweight, T* dbias,
                                     const T* dout, const T* hidden, const T* weight,
                                     const T* mean, const T* rstd, int64_t rows, int64_t cols,
                                     const DropoutMask& mask) {
  // the column sums: [0, cols) Σ dout·x̂, [cols, 2cols) Σ dout, [2cols, 3cols) Σ dinp
  const int64_t width = (dinp_bias ? 3 : 2) * cols;
  rows_with_column_sums(
      rows, cols, width,
      [&](int64_t r, double* __restrict acc) {
        const T* __restrict dy = dout + r * cols;
        const T* __restrict x = hidden + r * cols;
        T* __restrict dx = dresidual + r * cols;
        const T m = mean[r], s = rstd[r];
        // the two row means of dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w
        const double g_mean = row_sum8(cols, [&](int64_t c) { return dy[c] * weight[c]; }) / double(cols);
        const double gx_mean = row_sum8(cols, [&](int64_t c) {
          return double(dy[c] * weight[c]) * double((x[c] - m) * s);
        }) / double(cols);
        const T a = static_cast<T>(g_mean), b = static_cast<T>(gx_mean);
        double* __restrict aw = acc;
        double* __restrict ab = acc + cols;
        for (int64_t c = 0; c < cols; ++c) {
          const T xhat = (x[c] - m) * s;
          dx[c] = s * (dy[c] * weight[c] - a - xhat * b);
          aw[c] += double(dy[c] * xhat);  // dweight = Σ dout·x̂
          ab[c] += double(dy[c]);         // dbias = Σ dout
        }
        const T* di = dx;  // the gradient reaching inp: dresidual, through the mask if any
        if (dinp) {
          T* __restrict d = dinp + r * cols;
          for (int64_t c0 = 0; c0 < cols; c0 += kPiece) {
            const int64_t n = std::min(kPiece, cols - c0);
            T f[kPiece];
            dropout_factors(f, r * cols + c0, n, mask);
            std::copy(dx + c0, dx + c0 + n, d + c0);
            apply_factors(d + c0, f, n);  // dinp = dresidual·mask·scale
          }
          di = d;
        }
        if (dinp_bias) {
          double* __restrict ai = acc + 2 * cols;
          for (int64_t c = 0; c < cols; ++c) ai[c] += double(di[c]);  // dinp_bias = Σ dinp
        }
      },
      [&](int64_t j, double total) {
        T* dst = j < cols ? dweight + j : j < 2 * cols ? dbias + (j - cols) : dinp_bias + (j - 2 * cols);
        *dst = static_cast<T>(total);
      });
}

template <class T>
void layer_norm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                         const T* weight, const T* mean, const T* rstd, int64_t rows,
                         int64_t cols) {
  dropout_add_layer_norm_backward<T>(nullptr, dinp, nullptr, dweight, dbias, dout, inp, weight,
                                     mean, rstd, rows, cols, DropoutMask{});
}

#define MASE_LAYER_NORM_INSTANTIATE(T)                                                          \
  template void layer_norm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t,        \
                                      int64_t, double);                                         \
  template void layer_norm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,      \
                                       const T*, int64_t, int64_t);                             \
  template void dropout_add_layer_norm_forward<T>(T*, T*, T*, T*, const T*, const T*, const T*, \
                                                  const T*, const T*, int64_t, int64_t, double, \
                                                  const DropoutMask&);                          \
  template void dropout_add_layer_norm_backward<T>(T*, T*, T*, T*, T*, const T*, const T*,      \
                                                   const T*, const T*, const T*, int64_t,       \
                                                   int64_t, const DropoutMask&);
MASE_LAYER_NORM_INSTANTIATE(float)
MASE_LAYER_NORM_INSTANTIATE(double)
#undef MASE_LAYER_NORM_INSTANTIATE

}  // namespace mase::cpu
