// runtime/cpu/reduce.cpp — the (outer, reduce, inner) sum (see reduce.h).
#include "runtime/cpu/reduce.h"

#include <vector>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// Σ of n packed values in double, 4 independent accumulators so the adds pipeline/vectorise.
template <class T>
double sum_run(const T* x, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < n; ++i) s0 += x[i];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

template <class T>
void sum_forward(T* out, const T* inp, int64_t outer, int64_t reduce, int64_t inner) {
  if (inner == 1) {
    if (outer >= 2 * num_threads() || reduce < kGrainElems) {
      // many rows: one row per task step
      parallel_for(0, outer, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, reduce)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t o = lo; o < hi; ++o) out[o] = static_cast<T>(sum_run(inp + o * reduce, reduce));
                   });
      return;
    }
    // few long rows (e.g. the sum of a whole tensor): fixed-size chunks summed in parallel,
    // then the partial sums added in chunk order — the same result on 1 thread or 64
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
  // inner > 1: column sums. Split (outer × inner) into blocks of columns; each block walks
  // down `reduce` rows accumulating a strip of columns in double.
  constexpr int64_t kCols = 256;
  const int64_t col_blocks = (inner + kCols - 1) / kCols;
  parallel_for(0, outer * col_blocks, 1, [&](int64_t lo, int64_t hi) {
    double acc[kCols];
    for (int64_t j = lo; j < hi; ++j) {
      int64_t o = j / col_blocks, c0 = (j % col_blocks) * kCols;
      int64_t w = std::min(kCols, inner - c0);
      for (int64_t c = 0; c < w; ++c) acc[c] = 0;
      const T* base = inp + o * reduce * inner + c0;
      for (int64_t r = 0; r < reduce; ++r) {
        const T* row = base + r * inner;
        for (int64_t c = 0; c < w; ++c) acc[c] += row[c];
      }
      for (int64_t c = 0; c < w; ++c) out[o * inner + c0 + c] = static_cast<T>(acc[c]);
    }
  });
}

template void sum_forward<float>(float*, const float*, int64_t, int64_t, int64_t);
template void sum_forward<double>(double*, const double*, int64_t, int64_t, int64_t);

}  // namespace mase::cpu
