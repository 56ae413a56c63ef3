// runtime/cpu/layer_norm.cpp — row-wise layer norm kernels (see layer_norm.h and
// autograd/ops/layer_norm.cpp for the math).
//
// Forward: parallel over rows; mean and variance in double, two passes (Σx, then Σ(x − mean)²:
// the one-pass E[x²] − E[x]² cancels catastrophically when |mean| ≫ std).
// Backward: dinp is per row, but dweight/dbias are sums over all rows (column sums). To keep
// them deterministic on any number of threads, rows are cut into at most kMaxChunks chunks of
// a size fixed by (rows, cols) alone; each chunk sums its rows into its own double buffer,
// then the chunk buffers are added in chunk order. One allocation per call, none per row.
#include "runtime/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/rowwise.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {
constexpr int64_t kMaxChunks = 64;  // bounds the partial buffers at 64 × 2 × cols doubles
}  // namespace

template <class T>
void layer_norm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias,
                        int64_t rows, int64_t cols, double eps) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* x = inp + r * cols;
    T* y = out + r * cols;
    const double mu = row_sum(cols, [&](int64_t c) { return double(x[c]); }) / double(cols);
    const double var = row_sum(cols, [&](int64_t c) {
      const double d = x[c] - mu;
      return d * d;
    }) / double(cols);
    const T m = static_cast<T>(mu), s = static_cast<T>(1.0 / std::sqrt(var + eps));
    mean[r] = m;
    rstd[r] = s;
    for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
  });
}

template <class T>
void layer_norm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                         const T* weight, const T* mean, const T* rstd, int64_t rows,
                         int64_t cols) {
  const int64_t chunk =
      std::max(rows_grain(cols, kGrainElems), (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t nchunks = (rows + chunk - 1) / chunk;
  // chunk k owns partial[2k·cols, 2k·cols + cols) for Σ dy·x̂ and the next cols for Σ dy
  std::vector<double> partial(static_cast<size_t>(2 * nchunks * cols), 0.0);
  parallel_for(0, nchunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      double* pw = partial.data() + 2 * k * cols;
      double* pb = pw + cols;
      for (int64_t r = k * chunk; r < std::min(rows, (k + 1) * chunk); ++r) {
        const T* dy = dout + r * cols;
        const T* x = inp + r * cols;
        T* dx = dinp + r * cols;
        const T m = mean[r], s = rstd[r];
        // the two row means of dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w
        const double g_mean =
            row_sum(cols, [&](int64_t c) { return double(dy[c] * weight[c]); }) / double(cols);
        const double gx_mean = row_sum(cols, [&](int64_t c) {
          return double(dy[c] * weight[c]) * double((x[c] - m) * s);
        }) / double(cols);
        const T a = static_cast<T>(g_mean), b = static_cast<T>(gx_mean);
        for (int64_t c = 0; c < cols; ++c) {
          const T xhat = (x[c] - m) * s;
          dx[c] = s * (dy[c] * weight[c] - a - xhat * b);
          pw[c] += double(dy[c] * xhat);
          pb[c] += double(dy[c]);
        }
      }
    }
  });
  for (int64_t c = 0; c < cols; ++c) {  // add the chunks' partial sums in chunk order
    double w = 0, b = 0;
    for (int64_t k = 0; k < nchunks; ++k) {
      w += partial[2 * k * cols + c];
      b += partial[2 * k * cols + cols + c];
    }
    dweight[c] = static_cast<T>(w);
    dbias[c] = static_cast<T>(b);
  }
}

template void layer_norm_forward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, int64_t, int64_t, double);
template void layer_norm_forward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, int64_t, int64_t, double);
template void layer_norm_backward<float>(float*, float*, float*, const float*, const float*,
                                         const float*, const float*, const float*, int64_t,
                                         int64_t);
template void layer_norm_backward<double>(double*, double*, double*, const double*, const double*,
                                          const double*, const double*, const double*, int64_t,
                                          int64_t);

}  // namespace mase::cpu
