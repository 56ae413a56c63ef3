// runtime/cpu/quant_sign.cpp — binary, binary_scaling, ternary, residual sign (see quant_sign.h).
// Element functions: quant_elem.h (shared with cuda/quant_sign.cu).
#include "runtime/kernels/quant_sign.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "runtime/cpu/rowwise.h"
#include "runtime/kernels/quant_elem.h"
#include "runtime/parallel.h"
#include "runtime/random.h"

namespace mase::cpu {
namespace {

// Row statistics need ~cols operations each; give a task at least kGrainElems elements.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrainElems / std::max<int64_t>(cols, 1)); }

// binary of one row segment [lo, hi) of the flat index space, scaled by alpha.
template <class T>
void binary_span(T* out, const T* x, int64_t lo, int64_t hi, T alpha, bool bipolar, bool stochastic,
                 uint64_t seed, uint64_t offset) {
  const T neg = bipolar ? -alpha : T(0);
  if (!stochastic) {
    for (int64_t i = lo; i < hi; ++i)
      out[i] = quant::binary_one(x[i], alpha, neg);
    return;
  }
  // One Philox block gives the 4 words of elements 4k..4k+3 (the same numbers whatever the
  // chunking, so results do not depend on the thread count).
  std::array<uint32_t, 4> words{};
  int64_t have = -1;
  for (int64_t i = lo; i < hi; ++i) {
    if (i / 4 != have) words = philox4x32(offset + uint64_t(i / 4), seed), have = i / 4;
    out[i] = quant::binary_stochastic_one(x[i], words[i % 4], alpha, neg);
  }
}

// Σ|x| over a row in f64, and whether every element is finite. Eight double accumulators in a
// fixed tree (row_sum8): the loop vectorises, and the order depends on cols only, so the sum
// is the same on any thread count. A single chained sum ran at one add per 4 cycles (the
// add's latency): ternary was 14× a memcpy before, ~2× after this and its branches made
// selects (0.07 → 0.47 of a memcpy, docs/benchmarks.md).
// Finiteness comes for free: |x| summed in double cannot overflow from finite floats (4096 ×
// 3.4e38 ≪ 1.8e308), so the sum is finite exactly when every element is.
template <class T>
double row_abs_sum(const T* x, int64_t cols, bool* finite) {
  const double s = mase::cpu::row_sum8(cols, [&](int64_t j) { return std::abs(double(x[j])); });
  *finite = std::isfinite(s);
  return s;
}

}  // namespace

template <class T>
void binary_forward(T* out, const T* inp, int64_t n, bool bipolar, bool stochastic, uint64_t seed,
                    uint64_t offset) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    binary_span(out, inp, lo, hi, T(1), bipolar, stochastic, seed, offset);
  });
}

template <class T>
void binary_scaling_forward(T* out, const T* inp, int64_t rows, int64_t cols, bool bipolar,
                            bool stochastic, uint64_t seed, uint64_t offset) {
  parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = inp + r * cols;
      bool finite;
      const double mean = row_abs_sum(x, cols, &finite) / double(cols);
      if (!finite) {
        for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = NAN;
        continue;
      }
      binary_span(out, inp, r * cols, (r + 1) * cols, static_cast<T>(mean), bipolar, stochastic,
                  seed, offset);
    }
  });
}

template <class T>
void ternary_forward(T* out, const T* inp, int64_t rows, int64_t cols, bool scaling) {
  parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* x = inp + r * cols;
      T* y = out + r * cols;
      bool finite;
      const double delta = 0.75 * row_abs_sum(x, cols, &finite) / double(cols);
      if (!finite) {
        for (int64_t j = 0; j < cols; ++j) y[j] = NAN;
        continue;
      }
      double alpha = 1;
      if (scaling) {  // mean |x| over the elements that survive the threshold (branch-free)
        const double s = mase::cpu::row_sum8(cols, [&](int64_t j) {
          const double a = std::abs(double(x[j]));
          return a > delta ? a : 0.0;
        });
        int64_t count = 0;
        for (int64_t j = 0; j < cols; ++j) count += std::abs(double(x[j])) > delta;
        alpha = count ? s / double(count) : 0.0;
      }
      const T a = static_cast<T>(alpha);
      for (int64_t j = 0; j < cols; ++j) y[j] = quant::ternary_one(x[j], delta, a);
    }
  });
}

// Levels outer, elements inner, over blocks of kBlock elements held in two small arrays: each
// inner loop is a select, an add and a subtract across the block, which the compiler turns into
// 8-wide AVX2. (Elements outer with the short levels loop inside did not vectorise: 0.26 of a
// memcpy before, docs/benchmarks.md.)
template <class T>
void residual_sign_forward(T* out, const T* inp, const T* mu, int levels, int64_t n) {
  constexpr int64_t kBlock = 256;
  std::vector<T> m(levels);
  for (int l = 0; l < levels; ++l) m[l] = std::abs(mu[l]);
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    T r[kBlock], acc[kBlock];
    for (int64_t b = lo; b < hi; b += kBlock) {
      const int64_t len = std::min(kBlock, hi - b);
      for (int64_t i = 0; i < len; ++i) r[i] = inp[b + i], acc[i] = T(0);
      for (int l = 0; l < levels; ++l) {
        const T ml = m[l];
        for (int64_t i = 0; i < len; ++i) {
          const T term = quant::residual_term(r[i], ml);  // |μ_l|·s_l
          acc[i] += term;
          r[i] -= term;
        }
      }
      for (int64_t i = 0; i < len; ++i)
        out[b + i] = std::isnan(inp[b + i]) ? inp[b + i] : acc[i];
    }
  });
}

template <class T>
void residual_sign_backward(T* dinp, T* dmu, const T* dout, const T* inp, const T* mu, int levels,
                            int64_t n) {
  std::vector<T> m(levels);
  for (int l = 0; l < levels; ++l) m[l] = std::abs(mu[l]);
  // Partial sums per fixed chunk, added in chunk order: the same result for any thread count.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(256, (n + kGrainElems - 1) / kGrainElems));
  std::vector<double> part(size_t(chunks) * levels, 0.0);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
      double* acc = part.data() + c * levels;
      for (int64_t i = lo; i < hi; ++i) {
        T r = inp[i];
        for (int l = 0; l < levels; ++l) {
          const T s = r >= T(0) ? T(1) : T(-1);
          acc[l] += double(dout[i]) * double(s);
          r -= m[l] * s;
        }
        if (dinp) dinp[i] = std::abs(inp[i]) <= T(1) ? dout[i] : T(0);
      }
    }
  });
  for (int l = 0; l < levels; ++l) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += part[c * levels + l];
    const T sg = mu[l] > T(0) ? T(1) : (mu[l] < T(0) ? T(-1) : T(0));  // d|μ|/dμ
    dmu[l] = static_cast<T>(s) * sg;
  }
}

template <class T>
void clipped_ste_backward(T* dinp, const T* dout, const T* inp, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dinp[i] = std::abs(inp[i]) <= T(1) ? dout[i] : T(0);
  });
}

template <class T>
void binary_gamma_forward(T* out, const T* inp, T gamma, int64_t n) {
  binary_forward(out, inp, n, /*bipolar=*/true, /*stochastic=*/false, 0, 0);
  const T g = std::abs(gamma);
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] *= g;
  });
}

template <class T>
T binary_gamma_backward(T* dinp, const T* dout, const T* inp, T gamma, int64_t n) {
  const T g = std::abs(gamma);
  double s = 0;  // serial in f64: one weight matrix per call, and the same sum every run
  for (int64_t i = 0; i < n; ++i) {
    s += double(dout[i]) * (inp[i] >= T(0) ? 1.0 : -1.0);
    if (dinp) dinp[i] = std::abs(inp[i]) <= T(1) ? dout[i] * g : T(0);
  }
  const T sg = gamma > T(0) ? T(1) : (gamma < T(0) ? T(-1) : T(0));  // d|γ|/dγ
  return static_cast<T>(s) * sg;
}

#define MASE_SIGN_INSTANTIATE(T)                                                                  \
  template void binary_forward<T>(T*, const T*, int64_t, bool, bool, uint64_t, uint64_t);         \
  template void binary_scaling_forward<T>(T*, const T*, int64_t, int64_t, bool, bool, uint64_t,   \
                                          uint64_t);                                              \
  template void ternary_forward<T>(T*, const T*, int64_t, int64_t, bool);                         \
  template void residual_sign_forward<T>(T*, const T*, const T*, int, int64_t);                   \
  template void residual_sign_backward<T>(T*, T*, const T*, const T*, const T*, int, int64_t);    \
  template void clipped_ste_backward<T>(T*, const T*, const T*, int64_t);                         \
  template void binary_gamma_forward<T>(T*, const T*, T, int64_t);                                \
  template T binary_gamma_backward<T>(T*, const T*, const T*, T, int64_t);
MASE_SIGN_INSTANTIATE(float)
MASE_SIGN_INSTANTIATE(double)

}  // namespace mase::cpu
