// runtime/cpu/layer_norm.cpp — row-wise layer norm kernels, plain and fused with BERT's
// bias + dropout + residual add (see layer_norm.h, and autograd/ops/layer_norm.cpp for the math).
//
// Forward: parallel over rows; mean and variance in double, two passes (Σx, then Σ(x − mean)²:
// the one-pass E[x²] − E[x]² cancels catastrophically when |mean| ≫ std). The fused forward
// first builds the row it normalises, hidden = dropout(inp + inp_bias) + residual, so the
// row is in L1 when the two sums and the output pass read it again. Its dropout mask is drawn
// from Philox once, in the forward, and kept as one byte an element for the backward:
// reading 1 byte back costs far less than drawing the word again (0.5–1.4 ns a word with the
// vector generators, runtime/cpu/philox_x32.h).
// Backward: dinp is per row, but dweight/dbias (and the fused op's dinp_bias) are sums over
// all rows (column sums), taken while each row is in cache with rowwise.h's
// rows_with_column_sums: deterministic on any number of threads, no allocation.
// The plain kernels are the fused ones with nothing to add: the backward is literally the
// same function; the forward skips building `hidden` and normalises inp in place of it.
#include "runtime/kernels/layer_norm.h"
#include "runtime/cpu/philox_x32.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

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

// keep ? v·scale : 0, a select as in the dropout op (a dropped inf or NaN gives 0, and p = 1
// has scale 0). The byte is widened to an int first: GCC vectorises the select then.
template <class T>
inline T apply_keep_one(T v, uint8_t keep, T scale) {
  return static_cast<int32_t>(keep) != 0 ? v * scale : T(0);
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
void dropout_add_layer_norm_forward(T* out, T* hidden, uint8_t* keep, T* mean, T* rstd,
                                    const T* inp, const T* inp_bias, const T* residual,
                                    const T* weight, const T* bias, int64_t rows, int64_t cols,
                                    double eps, const DropoutMask& mask) {
  const T scale = static_cast<T>(mask.scale);
  for_each_row(rows, cols, [&](int64_t r) {
    const T* __restrict x = inp + r * cols;
    const T* __restrict res = residual + r * cols;
    // no backward to come (hidden null): the row's sum lives in a scratch row that stays in L1,
    // not in a (rows, cols) tensor written once and never read
    thread_local std::vector<T> scratch;
    if (!hidden && scratch.size() < size_t(cols)) scratch.resize(size_t(cols));
    T* __restrict h = hidden ? hidden + r * cols : scratch.data();
    if (inp_bias) for (int64_t c = 0; c < cols; ++c) h[c] = x[c] + inp_bias[c];
    else std::copy(x, x + cols, h);
    if (mask.on) {
      uint8_t* k = keep + r * cols;
      dropout_keep_mask(k, mask.rows(r) * cols, cols, mask);  // RowMap: runtime/philox.h
      for (int64_t c = 0; c < cols; ++c) h[c] = apply_keep_one(h[c], k[c], scale);
    }
    for (int64_t c = 0; c < cols; ++c) h[c] += res[c];
    normalize_row(out + r * cols, mean[r], rstd[r], h, weight, bias, cols, eps);
  });
}

template <class T>
void dropout_add_layer_norm_backward(T* dinp, T* dresidual, T* dinp_bias, T* dweight, T* dbias,
                                     const T* dout, const T* hidden, const uint8_t* keep,
                                     double scale, const T* weight, const T* mean, const T* rstd,
                                     int64_t rows, int64_t cols) {
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
          const uint8_t* k = keep + r * cols;
          for (int64_t c = 0; c < cols; ++c) d[c] = apply_keep_one(dx[c], k[c], T(scale));
          di = d;  // dinp = dresidual·keep·scale
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
  dropout_add_layer_norm_backward<T>(nullptr, dinp, nullptr, dweight, dbias, dout, inp, nullptr,
                                     1.0, weight, mean, rstd, rows, cols);
}

#define MASE_LAYER_NORM_INSTANTIATE(T)                                                          \
  template void layer_norm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t,        \
                                      int64_t, double);                                         \
  template void layer_norm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,      \
                                       const T*, int64_t, int64_t);                             \
  template void dropout_add_layer_norm_forward<T>(T*, T*, uint8_t*, T*, T*, const T*, const T*,  \
                                                  const T*, const T*, const T*, int64_t,        \
                                                  int64_t, double, const DropoutMask&);         \
  template void dropout_add_layer_norm_backward<T>(T*, T*, T*, T*, T*, const T*, const T*,      \
                                                   const uint8_t*, double, const T*, const T*,  \
                                                   const T*, int64_t, int64_t);
MASE_LAYER_NORM_INSTANTIATE(float)
MASE_LAYER_NORM_INSTANTIATE(double)
#undef MASE_LAYER_NORM_INSTANTIATE

}  // namespace mase::cpu
