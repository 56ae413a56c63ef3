// runtime/cpu/rowwise.h — helpers for the row-wise kernels of this folder (softmax.cpp,
// cross_entropy.cpp, layer_norm.cpp, gelu.cpp, sdpa.cpp): a parallel loop over rows,
// reductions along a row (sum, max), the shifted exp of softmax, and column sums taken
// alongside a row loop (the bias and LayerNorm weight gradients).
//
// Determinism: a row is never split between threads, and a row is always summed in the same
// order — four interleaved double accumulators, then (s0 + s1) + (s2 + s3) — so results do
// not depend on the thread count. Double accumulation keeps a float sum of 30522 terms (a
// BERT vocabulary row) exact to float precision; four accumulators let the adds pipeline.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/allocator.h"
#ifdef __AVX__
#include <immintrin.h>
#endif

#include "runtime/cpu/fast_math.h"
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

// Σ_{i<n} term(i) in double with 8 accumulators — two AVX2 registers of 4 doubles, so a loop
// over floats converts and adds 8 elements per step — combined in a fixed tree. The order
// depends on n only: the same bits on any thread count. (row_sum above keeps its order for
// the kernels whose results tests pin down.)
template <class F>
inline double row_sum8(int64_t n, F&& term) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += double(term(i + j));
  for (int j = 0; i < n; ++i, ++j) acc[j] += double(term(i));
  for (int w = 4; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// max_{i<n} x[i]; -inf for an empty row or a row of -inf (max is exact in any order). NaN
// entries are skipped, as std::max(m, NaN) is m. For f32 with AVX, 16 lanes in two registers
// (vmaxps): GCC does not vectorise a float max reduction without -ffast-math (not even one
// written with 16 lanes in an array), and a chain of scalar maxes costs as much as the exps.
template <class T>
inline T row_max(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
#ifdef __AVX__
  if constexpr (std::is_same_v<T, float>) {
    __m256 m0 = _mm256_set1_ps(m), m1 = m0;
    for (; i + 16 <= n; i += 16) {  // _mm256_max_ps(a, b) = a > b ? a : b: NaN a gives b
      m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
      m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
    for (float lane : lanes) m = std::max(m, lane);
  }
#endif
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// Column sums taken while a row loop runs: the backward kernels that produce a row gradient
// also owe Σ_rows of some per-element values (dbias = Σ_rows dy, dweight = Σ_rows dy·x̂).
// Rows are cut into at most 64 chunks whose size depends on (rows, cols) alone; chunk k gets
// its own `width` doubles, zeroed, and f(r, acc) handles row r adding into acc; then
// done(j, total_j) receives the column totals, the chunks added in chunk order. So the sums do
// not depend on the thread count. The partial sums (at most 64 × width doubles) come from the
// caching allocator: in steady state a call costs no allocation and no page fault.
template <class F, class Done>
void rows_with_column_sums(int64_t rows, int64_t cols, int64_t width, F&& f, Done&& done) {
  constexpr int64_t kMaxChunks = 64;
  const int64_t chunk = std::max(rows_grain(cols, kGrainElems), (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t nchunks = rows == 0 ? 0 : (rows + chunk - 1) / chunk;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, nchunks * width)) * sizeof(double);
  auto* partial = static_cast<double*>(allocate(Device::cpu(), bytes));
  try {
    parallel_for(0, nchunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        double* acc = partial + k * width;
        std::fill(acc, acc + width, 0.0);
        for (int64_t r = k * chunk; r < std::min(rows, (k + 1) * chunk); ++r) f(r, acc);
      }
    });
    for (int64_t j = 0; j < width; ++j) {
      double total = 0;
      for (int64_t k = 0; k < nchunks; ++k) total += partial[k * width + j];
      done(j, total);
    }
  } catch (...) {
    deallocate(Device::cpu(), partial, bytes);
    throw;
  }
  deallocate(Device::cpu(), partial, bytes);
}

// y[i] = exp(x[i] − m) for i < n (y may be x: in place), returning Σ y[i]. The shift m is the
// row max (or any bound on it), so every exp is in [0, 1] and the sum cannot overflow; the
// caller passes m = 0 for a row of −inf (exp(−inf − 0) = 0, where −inf − (−inf) is NaN).
// f32 goes through exp_f32_flush (fast_math.h: probabilities below 1.6e-38 become 0) in a
// loop of 16 that the compiler vectorises; the
// sum is kept in two AVX registers (as an array of 16 lanes, GCC keeps it in memory, and the
// store-to-load chain of the adds costs a quarter of the time). Summed in T, in a fixed order:
// the callers sum at most a few hundred terms per call, each ≤ 1, and add the calls' sums.
template <class T>
inline T exp_shift_sum(T* y, const T* x, T m, int64_t n) {
  int64_t i = 0;
  T s = 0;
#ifdef __AVX__
  if constexpr (std::is_same_v<T, float>) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (; i + 16 <= n; i += 16) {
      for (int l = 0; l < 16; ++l) y[i + l] = exp_f32_flush(x[i + l] - m);
      s0 = _mm256_add_ps(s0, _mm256_loadu_ps(y + i));  // read back from L1
      s1 = _mm256_add_ps(s1, _mm256_loadu_ps(y + i + 8));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
    for (float lane : lanes) s += lane;
  }
#endif
  for (; i < n; ++i) {
    y[i] = exp_flush_of(x[i] - m);
    s += y[i];
  }
  return s;
}

}  // namespace mase::cpu
