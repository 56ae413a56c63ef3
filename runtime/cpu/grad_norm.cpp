// runtime/cpu/grad_norm.cpp — deterministic Σ x² in double (see grad_norm.h).
#include "runtime/kernels/grad_norm.h"

#include <algorithm>
#include <vector>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// Σ x² of n packed values: 16 independent accumulators (lane j takes i ≡ j mod 16), which the
// compiler keeps in four AVX2 registers — four FMA chains in flight hide the FMA latency —
// without reassociating anything: the order of additions is fixed by the code, not by the
// vector width or the compiler.
template <class T>
double sum_squares_run(const T* x, int64_t n) {
  constexpr int kLanes = 16;
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const double xi = static_cast<double>(x[i + j]);
      acc[j] += xi * xi;
    }
  for (; i < n; ++i) acc[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  double s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

}  // namespace

template <class T>
double sum_squares(const T* x, int64_t n) {
  if (n <= kGrainElems) return sum_squares_run(x, n);
  const int64_t nchunks = (n + kGrainElems - 1) / kGrainElems;
  std::vector<double> partial(nchunks);
  parallel_for(0, nchunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t begin = c * kGrainElems;
      partial[c] = sum_squares_run(x + begin, std::min(kGrainElems, n - begin));
    }
  });
  double s = 0;
  for (double p : partial) s += p;  // in chunk order: deterministic
  return s;
}

template double sum_squares<float>(const float*, int64_t);
template double sum_squares<double>(const double*, int64_t);

}  // namespace mase::cpu
