// tests/quant/test_sign.cpp — binary, binary_scaling, ternary, binary_residual: values by hand,
// the stochastic draw recomputed from Philox, 2-D weights (which crashed in MASE), and the
// trainable residual parameters by finite differences.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "quant/quantize.h"

using namespace mase;
using namespace mase::quant;
using mase::test::check_close;

namespace test_sign {

namespace {
Format fmt(const char* name, nlohmann::json p = nullptr) { return make_format(name, p); }
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST_CASE("binary: deterministic bipolar and unipolar values") {
  Tensor x = Tensor::from({0.5f, -0.2f, 0.f, -0.f, 3.f, -INFINITY}, {2, 3});
  // +1 where x ≥ 0 (−0 ≥ 0 too), else −1 or 0
  CHECK(vals(quantize(x, fmt("binary"))) == std::vector<float>{1, -1, 1, 1, 1, -1});
  CHECK(vals(quantize(x, fmt("binary", {{"bipolar", false}}))) == std::vector<float>{1, 0, 1, 1, 1, 0});
  CHECK(std::isnan(quantize(Tensor::from({NAN}, {1}), fmt("binary")).item()));
}

TEST_CASE("binary: stochastic draws are Philox words compared with clamp((x+1)/2)") {
  const int64_t n = 4099;  // not a multiple of 4: the last Philox block is partly used
  Generator init(7);
  Tensor x = Tensor::empty({n});
  uniform_(x, -1.5, 1.5, init);
  Generator g(123);
  g.offset = 5;
  Tensor y = quantize(x, fmt("binary", {{"stochastic", true}}), g);
  CHECK(g.offset == 5 + (n + 3) / 4);  // the generator advanced past the words it used
  std::vector<float> xv = vals(x), yv = vals(y);
  int64_t plus = 0;
  for (int64_t i = 0; i < n; ++i) {
    float p = std::clamp((xv[i] + 1.f) / 2.f, 0.f, 1.f);
    float u = uint_to_unit(philox_word(123, 5, uint64_t(i)));
    CHECK(yv[i] == (u < p ? 1.f : -1.f));
    if (std::abs(xv[i]) >= 1) CHECK(yv[i] == (xv[i] > 0 ? 1.f : -1.f));  // p is 0 or 1 there
    plus += yv[i] > 0;
  }
  // the same seed and offset reproduce the draw; the next call draws new numbers
  Generator g2(123);
  g2.offset = 5;
  CHECK(vals(quantize(x, fmt("binary", {{"stochastic", true}}), g2)) == yv);
  CHECK(vals(quantize(x, fmt("binary", {{"stochastic", true}}), g2)) != yv);
  // E[+1 count] = Σ p_i; with n = 4099 the standard deviation is < 32: allow 5σ
  double expect = 0;
  for (float v : xv) expect += std::clamp((v + 1.0) / 2.0, 0.0, 1.0);
  CHECK(std::abs(plus - expect) < 160);
}

TEST_CASE("binary_scaling: alpha is mean |x| per row and per tensor for 1-D") {
  Tensor w = Tensor::from({1, -3, 0.5, 0.5, -1, 2}, {3, 2});
  // rows: α = (1+3)/2 = 2, (0.5+0.5)/2 = 0.5, (1+2)/2 = 1.5
  check_close(quantize(w, fmt("binary_scaling")), {2, -2, 0.5, 0.5, -1.5, 1.5});
  check_close(quantize(Tensor::from({1, -3, 0.5, 0.5}, {4}), fmt("binary_scaling")),
              {1.25, -1.25, 1.25, 1.25});  // α = 5/4
  // non-bipolar on a 2-D weight (crashed in MASE): α·{0, 1}
  check_close(quantize(w, fmt("binary_scaling", {{"bipolar", false}})), {2, 0, 0.5, 0.5, 0, 1.5});
  // a row holding inf has no mean: the row becomes NaN, the others are untouched
  std::vector<float> r = vals(quantize(Tensor::from({1, INFINITY, 2, -2}, {2, 2}), fmt("binary_scaling")));
  CHECK((std::isnan(r[0]) && std::isnan(r[1]) && r[2] == 2 && r[3] == -2));
}

TEST_CASE("ternary: threshold 0.75 mean |x| per row with and without scaling on 2-D weights") {
  Tensor w = Tensor::from({1, -0.1f, -2, 0.5f, 0, 0, 0, 0, 0.2f, 0.2f, -0.2f, 0.4f}, {3, 4});
  // row 0: mean|x| = 3.6/4 = 0.9, δ = 0.675: 1 -> +, −0.1 -> 0, −2 -> −, 0.5 -> 0;
  //        α = mean(1, 2) = 1.5
  // row 1: all zero -> zeros (α = 0: nothing passes δ = 0)
  // row 2: mean|x| = 0.25, δ = 0.1875: all pass; α = 0.25
  check_close(quantize(w, fmt("ternary", {{"scaling", true}})),
              {1.5, 0, -1.5, 0, 0, 0, 0, 0, 0.25, 0.25, -0.25, 0.25});
  check_close(quantize(w, fmt("ternary")), {1, 0, -1, 0, 0, 0, 0, 0, 1, 1, -1, 1});
}

TEST_CASE("clipped STE for the sign formats and plain STE for the others") {
  Tensor x = Tensor::from({-3, -1, -0.5f, 0, 0.99f, 1, 1.01f, 40}, {2, 4}).set_requires_grad(true);
  Tensor dy = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  for (const char* name : {"binary", "binary_scaling", "ternary", "binary_residual"}) {
    x.set_grad(Tensor());
    backward(quantize(x, fmt(name)), dy);
    check_close(x.grad(), {0, 2, 3, 4, 5, 6, 0, 0});  // dy where |x| ≤ 1
  }
  for (Format f : {fmt("integer", {{"width", 4}, {"frac_width", 1}}), fmt("log", {{"width", 4}}),
                   fmt("mxint8"), fmt("block_fp", {{"width", 4}, {"exponent_width", 3}, {"block_size", 3}})}) {
    x.set_grad(Tensor());
    backward(quantize(x, f), dy);
    check_close(x.grad(), {1, 2, 3, 4, 5, 6, 7, 8});  // inside and outside the range alike
  }
}

TEST_CASE("binary_residual: values by hand and the levels' gradient by finite differences") {
  // μ = (2/3, 1/3). x = 0.5: s1 = +1, r2 = 0.5 − 2/3 = −1/6, s2 = −1 -> 2/3 − 1/3 = 1/3.
  // x = −0.9: s1 = −1, r2 = −0.9 + 2/3 < 0, s2 = −1 -> −1. x = 2: +1, r2 = 4/3 -> +1 -> 1.
  Tensor x = Tensor::from({0.5f, -0.9f, 2.f}, {3});
  check_close(quantize(x, fmt("binary_residual")), {1.0 / 3, -1, 1});
  CHECK(residual_levels_init(3) == std::vector<double>{0.5, 1.0 / 3, 1.0 / 6});

  Generator g(3);
  Tensor xs = Tensor::empty({4, 9}, DType::f64);
  uniform_(xs, -2, 2, g);
  for (std::vector<double> m : {std::vector<double>{0.6, 0.3, 0.1}, {0.7, -0.2}, {-0.5}}) {
    Tensor mu = Tensor::from(m, {int64_t(m.size())}).set_requires_grad(true);
    CHECK(gradcheck([](const Tensors& in) { return residual_sign(in[0], in[1]); }, {xs, mu}));
  }
  // and the residual's input gradient is the clipped STE
  Tensor xg = Tensor::from({0.5, -1.5, 1.0}, {3}).to(DType::f64).set_requires_grad(true);
  Tensor mu = Tensor::from({0.7, 0.3}, {2}).to(DType::f64).set_requires_grad(true);
  backward(sum(residual_sign(xg, mu)));
  check_close(xg.grad(), {1, 0, 1});
  // dμ_l = sign(μ_l)·Σ s_l: signs level 1 (+, −, +), level 2: r2 = (−0.2, −0.8, 0.3) -> (−, −, +)
  check_close(mu.grad(), {1, -1});
}

TEST_CASE("binary_residual quantizers own mu and gamma and train them") {
  Quantizer qa(fmt("binary_residual", {{"levels", 3}}), Role::activation, 0, DType::f64);
  Quantizer qw(fmt("binary_residual"), Role::weight, 0, DType::f64);
  Quantizer qb(fmt("binary_residual"), Role::bias);
  REQUIRE(qa.parameters().size() == 1);
  CHECK(qa.parameters()[0].first == "mu");
  check_close(qa.parameters()[0].second, {0.5, 1.0 / 3, 1.0 / 6});
  REQUIRE(qw.parameters().size() == 1);
  CHECK(qw.parameters()[0].first == "gamma");
  CHECK(qb.parameters().empty());

  // gradients reach both through a tiny linear layer: y = Σ Q_in(x)·Q_w(W)ᵀ
  Generator g(5);
  Tensor x = Tensor::empty({3, 4}, DType::f64), w = Tensor::empty({2, 4}, DType::f64);
  uniform_(x, -1, 1, g);
  uniform_(w, -1, 1, g);
  Tensor mu = qa.parameters()[0].second, gamma = qw.parameters()[0].second;
  backward(sum(matmul(qa(x), transpose(qw(w), 0, 1))));
  REQUIRE(mu.grad().defined());
  REQUIRE(gamma.grad().defined());
  // γ: the finite-difference check through the same expression
  w.set_requires_grad(false);
  Tensor xq = qa(x).detach();
  CHECK(gradcheck([&](const Tensors& in) { return matmul(xq, transpose(binary_gamma(w, in[0]), 0, 1)); },
                  {gamma.detach().clone().set_requires_grad(true)}));
  // the bias is passed through unchanged
  CHECK(qb(x).is_same(x));
}

TEST_CASE("stochastic quantizers are reproducible from their seed") {
  Tensor x = Tensor::full({64}, 0.1);
  Quantizer a(fmt("binary", {{"stochastic", true}}), Role::activation, 42);
  Quantizer b(fmt("binary", {{"stochastic", true}}), Role::activation, 42);
  std::vector<float> a1 = vals(a(x)), a2 = vals(a(x));
  CHECK(a1 == vals(b(x)));
  CHECK(a2 == vals(b(x)));
  CHECK(a1 != a2);  // each call draws fresh numbers
}

TEST_CASE("ternary and binary_residual on odd sizes match element-by-element loops") {
  // The kernels vectorise (8 accumulators, blocks of 256 elements); these plain loops are the
  // definitions of formats.md written the obvious way. 5 rows of 1001: not a multiple of 8 or
  // 256, so every tail runs; row 3 holds a NaN (its ternary row becomes NaN).
  Generator g(11);
  Tensor w = Tensor::empty({5, 1001});
  uniform_(w, -2, 2, g);
  std::vector<float> x = vals(w);
  x[3 * 1001 + 17] = NAN;
  w = Tensor::from(x, {5, 1001});
  for (bool scaling : {false, true}) {
    std::vector<float> want(x.size());
    for (int r = 0; r < 5; ++r) {
      const float* row = x.data() + r * 1001;
      double sum = 0;
      for (int j = 0; j < 1001; ++j) sum += std::abs(double(row[j]));
      const double delta = 0.75 * sum / 1001;
      double s = 0;
      int count = 0;
      for (int j = 0; j < 1001; ++j)
        if (std::abs(double(row[j])) > delta) s += std::abs(double(row[j])), ++count;
      const float a = scaling ? float(s / count) : 1.f;
      for (int j = 0; j < 1001; ++j)
        want[r * 1001 + j] = std::isnan(sum) ? NAN : row[j] > delta ? a : row[j] < -delta ? -a : 0.f;
    }
    std::vector<float> got = vals(quantize(w, fmt("ternary", {{"scaling", scaling}})));
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(want[i])) {
        CHECK(std::isnan(got[i]));
      } else {
        CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
      }
    }
  }
  const std::vector<float> mu = {0.6f, 0.3f, 0.1f};
  Tensor flat = Tensor::from(x, {5005});
  std::vector<float> got = vals(residual_sign(flat, Tensor::from(mu, {3})));
  for (size_t i = 0; i < x.size(); ++i) {
    float r = x[i], acc = 0;
    for (float m : mu) {
      const float term = r >= 0 ? m : -m;
      acc += term, r -= term;
    }
    if (std::isnan(x[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == acc);
    }
  }
}

}  // namespace test_sign
