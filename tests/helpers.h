// tests/helpers.h — small helpers shared by the test suites.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/memory.h"
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace mase::test {

// Every element of `t` within atol + rtol·|expected| of `expected` (row-major order).
inline void check_close(const Tensor& t, const std::vector<double>& expected, double atol = 1e-6,
                        double rtol = 1e-6) {
  std::vector<double> v = t.to_vector<double>();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << " of " << t.shape());
    CHECK(std::abs(v[i] - expected[i]) <= atol + rtol * std::abs(expected[i]));
  }
}

inline void check_close(const Tensor& a, const Tensor& b, double atol = 1e-6, double rtol = 1e-6) {
  REQUIRE(a.shape() == b.shape());
  check_close(a, b.to_vector<double>(), atol, rtol);
}

// A CPU tensor of U[lo, hi) values drawn from Generator(seed): the same values on every run.
inline Tensor random_tensor(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1,
                            DType dtype = DType::f64) {
  Generator gen(seed);
  Tensor t = Tensor::empty(shape, dtype);
  uniform_(t, lo, hi, gen);
  return t;
}

// For CPU == CUDA tests: true when a GPU is usable; otherwise prints why the test is skipped.
inline bool have_gpu() {
  if (cuda::device_count() > 0) return true;
  MESSAGE("skipped: no CUDA device present");
  return false;
}

// The message of the exception `f` throws (doctest's CHECK_THROWS_WITH needs the exact text).
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace mase::test
