// runtime/cpu/rowwise.h — helpers for the row-wise kernels of this folder (softmax.cpp,
// cross_entropy.cpp, layer_norm.cpp): a parallel loop over rows and reductions along a row.
//
// Determinism: a row is never split between threads, and a row is always summed in the same
// order — four interleaved double accumulators, then (s0 + s1) + (s2 + s3) — so results do
// not depend on the thread count. Double accumulation keeps a float sum of 30522 terms (a
// BERT vocabulary row) exact to float precision; four accumulators let the adds pipeline.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

#include "runtime/parallel.h"

namespace mase::cpu {

// Rows per parallel_for chunk so that a chunk holds about `elems` elements (at least 1 row).
inline int64_t rows_grain(int64_t cols, int64_t elems) {
  return std::max<int64_t>(1, elems / std::max<int64_t>(1, cols));
}

// f(r) for every row r in [0, rows), rows of `cols` elements spread over the thread pool.
template <class F>
void for_each_row(int64_t rows, int64_t cols, F&& f) {
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) f(r);
  });
}

// Σ_{i<n} term(i), in double, in the fixed order described above.
template <class F>
inline double row_sum(int64_t n, F&& term) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += term(i);
    s1 += term(i + 1);
    s2 += term(i + 2);
    s3 += term(i + 3);
  }
  for (; i < n; ++i) s0 += term(i);
  return (s0 + s1) + (s2 + s3);
}

// max_{i<n} x[i]; -inf for an empty row or a row of -inf (max is exact in any order).
template <class T>
inline T row_max(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

}  // namespace mase::cpu
