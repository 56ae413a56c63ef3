// tests/runtime/test_fast_math.cpp — exp_f32 and tanh_f32 (runtime/cpu/fast_math.h) against
// double-precision libm, in ulps of the f32 result, over a dense sample of every float in
// their range; plus the special values. The loops are the same shape as the kernels', so
// what is checked is the vectorised code that runs in unary.cpp.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/fast_math.h"

using namespace mase;

namespace {

// The spacing of f32 values at |ref| (2^-149 among subnormals): the size of one ulp.
double ulp_of(double ref) {
  const double a = std::abs(ref);
  if (a < 0x1p-126) return 0x1p-149;
  int e = 0;
  std::frexp(a, &e);  // a = m·2^e, m in [0.5, 1)
  return std::ldexp(1.0, e - 24);
}

// Every 509th f32 bit pattern whose value lies in [lo, hi]: millions, dense in every binade.
std::vector<float> sample(float lo, float hi) {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 509) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (x >= lo && x <= hi) xs.push_back(x);
  }
  return xs;
}

template <class F, class Ref>
double max_ulp_error(const std::vector<float>& xs, F f, Ref ref, float* worst_x) {
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = f(xs[i]);  // vectorised like the kernel
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double r = ref(static_cast<double>(xs[i]));
    const double err = std::abs(ys[i] - r) / ulp_of(r);
    if (!(err <= worst)) {  // NaN results count as the worst
      worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
      *worst_x = xs[i];
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("exp_f32 is within 2 ulp of exp over its whole range") {
  // 88.7228 is the largest x with e^x <= FLT_MAX; -104 is below the smallest subnormal's log
  std::vector<float> xs = sample(-104.0f, 88.7228f);
  REQUIRE(xs.size() > 3'000'000);
  float at = 0;
  // a lambda, not the function's address: it is always_inline (the kernels' contract)
  double err = max_ulp_error(xs, [](float x) { return cpu::exp_f32(x); },
                             [](double x) { return std::exp(x); }, &at);
  INFO("worst at x = " << at);
  CHECK(err <= 2.0);  // measured: 1.004 ulp (exhaustively, over every float)
}

TEST_CASE("exp_f32_flush is within 2 ulp of exp down to its flush point") {
  std::vector<float> xs = sample(-87.0f, 88.0f);
  float at = 0;
  // a lambda, not the function's address: it is always_inline (the kernels' contract)
  double err = max_ulp_error(xs, [](float x) { return cpu::exp_f32_flush(x); },
                             [](double x) { return std::exp(x); }, &at);
  INFO("worst at x = " << at);
  CHECK(err <= 2.0);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(cpu::exp_f32_flush(-87.01f) == 0.0f);  // below the flush point: exactly 0
  CHECK(cpu::exp_f32_flush(-1e30f) == 0.0f);
  CHECK(cpu::exp_f32_flush(-inf) == 0.0f);     // a masked score
  CHECK(cpu::exp_f32_flush(-87.0f) > 0x1p-126f);
  CHECK(cpu::exp_f32_flush(0.0f) == 1.0f);
  CHECK(std::isnan(cpu::exp_f32_flush(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("tanh_f32 is within 2 ulp of tanh") {
  std::vector<float> xs = sample(-12.0f, 12.0f);  // beyond ±9.01 tanh rounds to ±1
  float at = 0;
  // a lambda, not the function's address: it is always_inline (the kernels' contract)
  double err = max_ulp_error(xs, [](float x) { return cpu::tanh_f32(x); },
                             [](double x) { return std::tanh(x); }, &at);
  INFO("worst at x = " << at);
  CHECK(err <= 2.0);  // measured: 1.33 ulp (exhaustively, near the 0.625 switch)
}

TEST_CASE("exp_f32 and tanh_f32 special values") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(cpu::exp_f32(0.0f) == 1.0f);              // r = 0, P contributes nothing
  CHECK(std::abs(cpu::exp_f32(1.0f) - 2.718281828459045) <= 0x1p-22);  // e, within 1 ulp
  CHECK(cpu::exp_f32(-inf) == 0.0f);
  CHECK(cpu::exp_f32(-104.0f) == 0.0f);           // e^-104 = 6.8e-46 < 2^-150: rounds to 0
  CHECK(cpu::exp_f32(-100.0f) > 0.0f);            // e^-100 = 3.7e-44: a subnormal, not 0
  CHECK(cpu::exp_f32(-100.0f) < 0x1p-126f);
  CHECK(cpu::exp_f32(89.0f) == inf);              // e^89 = 4.5e38 > FLT_MAX
  CHECK(cpu::exp_f32(inf) == inf);
  CHECK(std::isnan(cpu::exp_f32(nan)));
  CHECK(cpu::tanh_f32(0.0f) == 0.0f);
  CHECK(cpu::tanh_f32(inf) == 1.0f);
  CHECK(cpu::tanh_f32(-inf) == -1.0f);
  CHECK(cpu::tanh_f32(20.0f) == 1.0f);
  CHECK(std::isnan(cpu::tanh_f32(nan)));
  CHECK(cpu::tanh_f32(-0.5f) == -cpu::tanh_f32(0.5f));  // odd on both branches
  CHECK(cpu::tanh_f32(-3.0f) == -cpu::tanh_f32(3.0f));
}

// Φ(x) and its density in double: the oracle for normal_cdf_f32 and the GELU helpers.
double phi_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double phi_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * 3.14159265358979323846); }

TEST_CASE("normal_cdf_f32 and gelu_f32 are within 1e-6 relative of double") {
  // Φ(−13) = 6e-39 is about the smallest normal float: below it results are subnormal and
  // relative error means nothing
  std::vector<float> xs = sample(-13.0f, 13.0f);
  REQUIRE(xs.size() > 1'000'000);
  std::vector<float> cdf(xs.size()), gelu(xs.size()), grad(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) cdf[i] = cpu::normal_cdf_f32(xs[i]);  // vectorised loops,
  for (size_t i = 0; i < xs.size(); ++i) gelu[i] = cpu::gelu_f32(xs[i]);       // as in the kernels
  for (size_t i = 0; i < xs.size(); ++i) grad[i] = cpu::gelu_grad_f32(xs[i]);
  double worst_cdf = 0, worst_gelu = 0, worst_grad = 0;
  float at_cdf = 0, at_gelu = 0, at_grad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i], c = phi_cdf(x), p = phi_pdf(x);
    const double e_cdf = std::abs(cdf[i] - c) / c;
    // |x| < 2.4e-38 makes x·Φ(x) a subnormal, where relative error means nothing: skip
    const bool normal = std::abs(x * c) >= 0x1p-126;
    const double e_gelu = normal ? std::abs(gelu[i] - x * c) / std::abs(x * c) : 0.0;
    // gelu' = Φ + x·φ crosses 0 near x = −0.75: measure against the size of its terms
    const double e_grad = std::abs(grad[i] - (c + x * p)) / (c + std::abs(x) * p);
    if (!(e_cdf <= worst_cdf)) worst_cdf = e_cdf, at_cdf = xs[i];
    if (!(e_gelu <= worst_gelu)) worst_gelu = e_gelu, at_gelu = xs[i];
    if (!(e_grad <= worst_grad)) worst_grad = e_grad, at_grad = xs[i];
  }
  INFO("worst: cdf at " << at_cdf << ", gelu at " << at_gelu << ", gelu' at " << at_grad);
  CHECK(worst_cdf <= 1e-6);
  CHECK(worst_gelu <= 1e-6);
  CHECK(worst_grad <= 1e-6);
  MESSAGE("max relative error: cdf " << worst_cdf << ", gelu " << worst_gelu << ", gelu' "
                                     << worst_grad);
}

TEST_CASE("normal_cdf_f32 and the GELU helpers at special values") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::abs(cpu::normal_cdf_f32(0.0f) - 0.5f) <= 0x1p-24f);  // within 1 ulp of ½
  CHECK(cpu::normal_cdf_f32(-inf) == 0.0f);
  CHECK(cpu::normal_cdf_f32(inf) == 1.0f);
  CHECK(cpu::normal_cdf_f32(-30.0f) == 0.0f);   // Φ(−30) = 5e-198
  CHECK(cpu::normal_cdf_f32(-13.5f) > 0.0f);    // Φ(−13.5) = 7.7e-42: a subnormal, not 0
  CHECK(std::isnan(cpu::normal_cdf_f32(nan)));
  CHECK(cpu::gelu_f32(0.0f) == 0.0f);
  CHECK(cpu::gelu_f32(inf) == inf);
  CHECK(cpu::gelu_f32(-30.0f) == 0.0f);
  CHECK(std::isnan(cpu::gelu_f32(nan)));
  CHECK(cpu::gelu_grad_f32(0.0f) == cpu::normal_cdf_f32(0.0f));  // Φ(0) + 0·φ(0)
  CHECK(cpu::gelu_grad_f32(20.0f) == 1.0f);
  CHECK(cpu::gelu_grad_f32(-30.0f) == 0.0f);
  CHECK(std::isnan(cpu::gelu_grad_f32(nan)));
}
