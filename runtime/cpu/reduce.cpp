// runtime/cpu/reduce.cpp — the (outer, reduce, inner) sum and max (see reduce.h).
//
// Sums accumulate in double and are split into pieces whose boundaries depend only on the
// shape, never on the thread count; partial sums are then added in a fixed order. So the
// result is the same on 1 thread or 64 (tested), and a sum of 25M floats loses nothing to
// f32 rounding before the one final conversion.
#include "runtime/kernels/reduce.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "runtime/cpu/rowwise.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// Σ of n packed values in double. 16 independent accumulators: the compiler keeps them in
// four AVX2 registers of 4 doubles and the loop runs at load speed. With one accumulator
// each add would wait for the previous one (4 cycles): 1 float per 4 cycles, slower than
// memory. The lanes are combined in a fixed tree, so the order never changes.
// A read-only stream is limited by how many cache misses a core keeps in flight, and the
// hardware prefetcher alone keeps too few: asking for the line 4 KB ahead (one prefetch per
// 64-byte line) took sums over 100 MB from ~0.5 to ~0.8 of memcpy's speed on one core
// (mase-bench --threads 1, docs/benchmarks.md). Prefetching past the end is harmless.
template <class T>
double sum_run(const T* x, int64_t n) {
  constexpr int kLanes = 64 / sizeof(T);        // one cache line per step: 16 floats, 8 doubles
  constexpr int64_t kAhead = 4096 / sizeof(T);  // prefetch distance: 4 KB
  double acc[16] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    __builtin_prefetch(x + i + kAhead);
    for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<double>(x[i + j]);
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += static_cast<double>(x[i]);
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// Column sums of one tile: acc[c] += Σ_{r < rows} x[r·ld + c] for c < w. Each row of the
// strip is a short run (1 KB) far from the previous one, which the hardware prefetcher does
// not follow: prefetch the strip 4 rows ahead (~0.55 -> ~0.85 of memcpy on (8192, 3072)).
template <class T>
void sum_columns(double* acc, const T* x, int64_t rows, int64_t w, int64_t ld) {
  constexpr int64_t kRowsAhead = 4, kLine = 64 / sizeof(T);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    for (int64_t c = 0; c < w; c += kLine) __builtin_prefetch(row + kRowsAhead * ld + c);
    for (int64_t c = 0; c < w; ++c) acc[c] += static_cast<double>(row[c]);
  }
}

}  // namespace

template <class T>
void sum_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner) {
  if (inner == 1) {
    if (reduce <= kGrainElems) {
      // rows of up to one chunk (sum over the last dim of activations): a row per step
      parallel_for(0, outer, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, reduce)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t o = lo; o < hi; ++o)
                       out[o] = static_cast<T>(sum_run(inp + o * reduce, reduce));
                   });
      return;
    }
    // long rows (e.g. the sum of a whole tensor): fixed-size chunks summed in parallel,
    // then the partial sums of each row added in chunk order
    const int64_t chunk = kGrainElems;
    const int64_t nchunks = (reduce + chunk - 1) / chunk;
    std::vector<double> partial(outer * nchunks);
    parallel_for(0, outer * nchunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t j = lo; j < hi; ++j) {
        int64_t o = j / nchunks, c = j % nchunks;
        int64_t begin = c * chunk, len = std::min(chunk, reduce - begin);
        partial[j] = sum_run(inp + o * reduce + begin, len);
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      double s = 0;
      for (int64_t c = 0; c < nchunks; ++c) s += partial[o * nchunks + c];
      out[o] = static_cast<T>(s);
    }
    return;
  }
  // inner > 1: column sums, e.g. the bias gradient Σ over 8192 rows of (8192, 768). Each
  // (reduce × inner) matrix is cut into tiles of kRows rows × kCols columns; a tile sums its
  // rows into a strip of kCols doubles (the inner loop runs along a row: vectorised, and each
  // cache line read is used whole). Tiles of one column strip are added in row order. Cutting
  // rows too, not only columns, gives enough tasks when inner is small (768 = 3 strips).
  constexpr int64_t kCols = 256, kRows = 256;
  const int64_t col_blocks = (inner + kCols - 1) / kCols;
  const int64_t row_blocks = (reduce + kRows - 1) / kRows;
  // partial[o][rb][c]: the sum of row block rb of column c (written directly when one block)
  std::vector<double> partial(row_blocks > 1 ? outer * row_blocks * inner : 0);
  parallel_for(0, outer * row_blocks * col_blocks, 1, [&](int64_t lo, int64_t hi) {
    double acc[kCols];
    for (int64_t j = lo; j < hi; ++j) {
      const int64_t cb = j % col_blocks, rb = (j / col_blocks) % row_blocks;
      const int64_t o = j / (col_blocks * row_blocks);
      const int64_t c0 = cb * kCols, w = std::min(kCols, inner - c0);
      const int64_t r0 = rb * kRows, rows = std::min(kRows, reduce - r0);
      std::fill(acc, acc + w, 0.0);
      sum_columns(acc, inp + (o * reduce + r0) * inner + c0, rows, w, inner);
      if (row_blocks == 1) {
        for (int64_t c = 0; c < w; ++c) out[o * inner + c0 + c] = static_cast<T>(acc[c]);
      } else {
        std::copy(acc, acc + w, partial.begin() + (o * row_blocks + rb) * inner + c0);
      }
    }
  });
  if (row_blocks == 1) return;
  if (row_blocks == 0) {  // nothing to sum over: zeros
    std::fill(out, out + outer * inner, T(0));
    return;
  }
  parallel_for(0, outer, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      double* s = partial.data() + o * row_blocks * inner;  // row block 0, then add the others
      for (int64_t rb = 1; rb < row_blocks; ++rb)
        for (int64_t c = 0; c < inner; ++c) s[c] += s[rb * inner + c];
      for (int64_t c = 0; c < inner; ++c) out[o * inner + c] = static_cast<T>(s[c]);
    }
  });
}

template void sum_forward<float>(float*, const float*, int64_t, int64_t, int64_t);
template void sum_forward<double>(double*, const double*, int64_t, int64_t, int64_t);

// The max is exact in any order, so it needs none of the sum's care: each (o, i) is one
// output. Rows (inner == 1: the row max of softmax) go through row_max (rowwise.h, 16 AVX
// lanes: GCC does not vectorise a float max reduction by itself); columns take the max of
// whole rows at a time, a loop along memory that does vectorise.
template <class T>
void max_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner) {
  parallel_for(0, outer, rows_grain(reduce * inner, kGrainElems), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      if (inner == 1) {
        out[o] = row_max(inp + o * reduce, reduce);
        continue;
      }
      T* m = out + o * inner;
      std::fill(m, m + inner, -std::numeric_limits<T>::infinity());
      for (int64_t r = 0; r < reduce; ++r) {
        const T* x = inp + (o * reduce + r) * inner;
        for (int64_t i = 0; i < inner; ++i) m[i] = std::max(m[i], x[i]);  // NaN x: m stays
      }
    }
  });
}

// Ties are counted first, then dout / count goes to each of them.
template <class T>
void max_backward(T* dinp, const T* dout, const T* inp, const T* out, int64_t outer,
                  int64_t reduce, int64_t inner) {
  parallel_for(0, outer, rows_grain(reduce * inner, kGrainElems), [&](int64_t lo, int64_t hi) {
    std::vector<T> share(static_cast<size_t>(inner));
    for (int64_t o = lo; o < hi; ++o) {
      const T *m = out + o * inner, *dm = dout + o * inner;
      std::fill(share.begin(), share.end(), T(0));
      for (int64_t r = 0; r < reduce; ++r) {
        const T* x = inp + (o * reduce + r) * inner;
        for (int64_t i = 0; i < inner; ++i) share[i] += x[i] == m[i] ? T(1) : T(0);
      }
      for (int64_t i = 0; i < inner; ++i) share[i] = share[i] > 0 ? dm[i] / share[i] : T(0);
      for (int64_t r = 0; r < reduce; ++r) {
        const T* x = inp + (o * reduce + r) * inner;
        T* dx = dinp + (o * reduce + r) * inner;
        for (int64_t i = 0; i < inner; ++i) dx[i] = x[i] == m[i] ? share[i] : T(0);
      }
    }
  });
}

template void max_forward<float>(float*, const float*, int64_t, int64_t, int64_t);
template void max_forward<double>(double*, const double*, int64_t, int64_t, int64_t);
template void max_backward<float>(float*, const float*, const float*, const float*, int64_t,
                                  int64_t, int64_t);
template void max_backward<double>(double*, const double*, const double*, const double*,
                                   int64_t, int64_t, int64_t);

}  // namespace mase::cpu
