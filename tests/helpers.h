// tests/helpers.h — small helpers shared by the test suites.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/device.h"
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

// n floats uniform in [-1, 1) from std::mt19937(seed): raw buffers for kernel-level tests.
inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

// Inputs for gradcheck: a random_tensor in f64 that requires grad.
inline Tensor random_f64(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1) {
  return random_tensor(shape, seed, lo, hi, DType::f64).set_requires_grad(true);
}

// 0, 1, ..., numel(shape) - 1 laid out in `shape`: values that name their own index.
inline Tensor arange(const Shape& shape, DType dtype = DType::f32) {
  std::vector<double> v(numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from(v, shape).to(dtype);
}

// A case that cannot run on this machine (no GPU, no data, no tool) calls skip(why) and
// returns. The line it prints makes ctest report the case as *skipped*, not passed: every test
// is registered with SKIP_REGULAR_EXPRESSION "MASE_SKIPPED:" (tests/CMakeLists.txt), and
// scripts/test.sh prints how many were skipped.
inline void skip(const std::string& why) {
  std::printf("MASE_SKIPPED: %s\n", why.c_str());
  std::fflush(stdout);
}

// Whether a GPU is usable, silently (for cases that test the no-GPU behaviour).
inline bool gpu_present() { return cuda_device_count() > 0; }
// For CPU == CUDA tests: true when a GPU is usable; otherwise skip()s the case.
inline bool have_gpu() {
  if (gpu_present()) return true;
  skip("no CUDA device present");
  return false;
}

// A tensor that says it lives on cuda:0 but borrows host memory that nothing ever reads. It
// lets a machine without a GPU check that ops refuse to mix devices: the device check must
// throw before any kernel runs, so the memory is never touched. Never read its values.
inline Tensor fake_cuda(const Shape& shape, DType dtype = DType::f32) {
  auto host = std::make_shared<std::vector<unsigned char>>(numel(shape) * itemsize(dtype) + 1);
  auto storage = std::make_shared<Storage>(host->data(), host->size(), Device::cuda(0), host);
  return Tensor::from_storage(storage, shape, contiguous_strides(shape), 0, dtype);
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
