// runtime/cpu/cross_entropy.cpp — the fused cross-entropy kernels (see cross_entropy.h).
//
// Forward, parallel over rows: one row's max, Σ exp(x − max) (in double) and logsumexp;
// the per-row losses are then added in row order (deterministic on any number of threads).
// The logsumexp per row is kept for the backward, which then needs a single pass per row.
#include "runtime/kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {

template <class T>
void cross_entropy_forward(T* loss, T* losses, T* lse, const T* logits, const int32_t* targets,
                           int64_t N, int64_t C, int64_t ignore_index, int64_t count) {
  for_each_row(N, C, [&](int64_t r) {
    const T* x = logits + r * C;
    const T m = row_max(x, C);
    // log Σ exp(x) = m + log Σ exp(x − m), every exp ≤ 1
    const double l =
        double(m) + std::log(row_sum(C, [&](int64_t c) { return double(std::exp(x[c] - m)); }));
    lse[r] = static_cast<T>(l);
    losses[r] = targets[r] == ignore_index ? T(0) : static_cast<T>(l - double(x[targets[r]]));
  });
  double total = 0;  // in row order
  for (int64_t r = 0; r < N; ++r) total += double(losses[r]);
  loss[0] = count == 0 ? T(0) : static_cast<T>(total / double(count));
}

template <class T>
void cross_entropy_backward(T* dlogits, const T* dloss, const T* logits, const T* lse,
                            const int32_t* targets, int64_t N, int64_t C, int64_t ignore_index,
                            int64_t count) {
  const T scale = count == 0 ? T(0) : static_cast<T>(double(dloss[0]) / double(count));
  for_each_row(N, C, [&](int64_t r) {
    const T* x = logits + r * C;
    T* dx = dlogits + r * C;
    if (targets[r] == ignore_index) {
      std::fill(dx, dx + C, T(0));
      return;
    }
    // dx = (softmax(x) − onehot(target))·dloss/count, softmax(x) = exp(x − lse)
    const T l = lse[r];
    for (int64_t c = 0; c < C; ++c) dx[c] = std::exp(x[c] - l) * scale;
    dx[targets[r]] -= scale;
  });
}

template void cross_entropy_forward<float>(float*, float*, float*, const float*, const int32_t*,
                                           int64_t, int64_t, int64_t, int64_t);
template void cross_entropy_forward<double>(double*, double*, double*, const double*,
                                            const int32_t*, int64_t, int64_t, int64_t, int64_t);
template void cross_entropy_backward<float>(float*, const float*, const float*, const float*,
                                            const int32_t*, int64_t, int64_t, int64_t, int64_t);
template void cross_entropy_backward<double>(double*, const double*, const double*,
                                             const double*, const int32_t*, int64_t, int64_t,
                                             int64_t, int64_t);

}  // namespace mase::cpu
