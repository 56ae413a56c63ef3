// tests/autograd/test_dropout.cpp — dropout: the mask is exactly the Philox stream's test
// against p, successive calls differ, backward regenerates the same mask, identity cases,
// gradcheck, errors.
#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/kernels/dropout.h"

using namespace mase;
using mase::test::check_close;

namespace {
// The definition, straight from the op's contract: element i of a call whose counters start
// at block `offset` is kept iff uint_to_unit(philox_word(seed, offset, i)) >= p.
std::vector<double> expected_dropout(const std::vector<double>& x, double p, uint64_t seed,
                                     uint64_t offset) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = uint_to_unit(philox_word(seed, offset, i)) >= p ? x[i] / (1 - p) : 0.0;
  return y;
}
std::vector<double> iota(size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i + 1);
  return v;
}
}  // namespace

TEST_CASE("dropout: the mask is Philox word i tested against p and calls advance the counters") {
  Generator g(42);
  Tensor x = Tensor::from(std::vector<double>(iota(10)), {2, 5});
  Tensor y1 = dropout(x, 0.5, true, g);  // survivors are 2·x: 1/(1 - 0.5) = 2
  CHECK(g.offset == 3);                  // ceil(10 / 4) Philox blocks taken
  check_close(y1, expected_dropout(iota(10), 0.5, 42, 0), 0, 0);
  Tensor y2 = dropout(x, 0.5, true, g);  // the next call reads blocks 3.. : another mask
  CHECK(g.offset == 6);
  check_close(y2, expected_dropout(iota(10), 0.5, 42, 3), 0, 0);
  CHECK(y1.to_vector<double>() != y2.to_vector<double>());
  // a view is dropped in its logical (row-major) order, like its packed copy
  Generator ga(9), gb(9);
  Tensor xt = transpose(Tensor::from(std::vector<double>(iota(12)), {3, 4}), 0, 1);
  check_close(dropout(xt, 0.25, true, ga), dropout(contiguous(xt), 0.25, true, gb), 0, 0);
}

TEST_CASE("dropout: the integer threshold equals the float test for every 24-bit value") {
  // exhaustive over the 2^24 values uint_to_unit can take: (w >> 8) >= ceil(p·2^24) exactly
  // when uint_to_unit(w) >= p, so CPU and GPU (which compare integers) follow the definition
  for (double p : {0.1, 1.0 / 3.0, 0.5, 0.9999999, 1.0, 0.0}) {
    uint32_t t = dropout_threshold(p);
    int64_t mismatches = 0;
    for (uint32_t k = 0; k < (1u << 24); ++k)
      mismatches += dropout_keep(k << 8, t) != (static_cast<double>(uint_to_unit(k << 8)) >= p);
    INFO("p = " << p);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("dropout: about a fraction p is dropped and the mean is kept") {
  Generator g(3);
  const int64_t n = 200000;
  auto y = dropout(Tensor::ones({n}), 0.1, true, g).to_vector<double>();
  double kept = 0, mean = 0;
  for (double v : y) {
    kept += v != 0;
    mean += v;
  }
  kept /= n;
  mean /= n;
  // standard error of the kept fraction: sqrt(0.1·0.9 / n) = 6.7e-4; tolerance ~7.5 of them
  CHECK(std::abs(kept - 0.9) < 0.005);
  CHECK(std::abs(mean - 1.0) < 0.006);  // survivors are 1/0.9, so the mean is kept/0.9
}

TEST_CASE("dropout: backward regenerates the forward mask") {
  Generator g(77);
  Tensor x = Tensor::ones({37}).set_requires_grad(true);
  Tensor y = dropout(x, 0.3, true, g);
  rand({100}, g);  // later draws from the same generator must not change the backward
  backward(y, Tensor::ones({37}));
  // x = 1, so y_i = m_i / 0.7 and dx_i = 1 · m_i / 0.7: the same tensor
  check_close(x.grad(), y.to_vector<double>(), 0, 0);
  int zeros = 0;
  for (float v : y.to_vector<float>()) zeros += v == 0.0f;
  CHECK(zeros > 0);    // the mask is not trivial...
  CHECK(zeros < 37);   // ...either way
}

TEST_CASE("dropout: identity when p is 0 or not training and zeros when p is 1") {
  Generator g(1);
  Tensor x = Tensor::from({1, -2, 3}, {3}).set_requires_grad(true);
  for (auto [p, training] : std::vector<std::pair<double, bool>>{{0.0, true}, {0.5, false}}) {
    x.set_grad(Tensor());
    Tensor y = dropout(x, p, training, g);
    CHECK(!y.is_same(x));   // a new handle, recorded as an op
    check_close(y, {1, -2, 3}, 0, 0);
    backward(y, Tensor::from({4, 5, 6}, {3}));
    check_close(x.grad(), {4, 5, 6}, 0, 0);  // dx = dy
  }
  CHECK(g.offset == 0);  // the identity takes no random numbers
  x.set_grad(Tensor());
  Tensor y = dropout(x, 1.0, true, g);
  check_close(y, {0, 0, 0}, 0, 0);
  backward(y, Tensor::from({4, 5, 6}, {3}));
  check_close(x.grad(), {0, 0, 0}, 0, 0);
}

TEST_CASE("dropout: gradcheck in f64") {
  Generator init(8);
  Tensor x = Tensor::empty({4, 5}, DType::f64);
  uniform_(x, -1, 1, init);
  x.set_requires_grad(true);
  // a fresh generator per call: every evaluation of f must draw the same mask
  CHECK(gradcheck([](const Tensors& t) { Generator g(7); return dropout(t[0], 0.3, true, g); }, {x}));
  CHECK(gradcheck([](const Tensors& t) { Generator g(7); return dropout(t[0], 0.3, false, g); }, {x}));
}

TEST_CASE("dropout: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Generator g1(21), g2(21);
  Tensor x = rand({3, 1001}).set_requires_grad(true);
  Tensor xg = x.detach().to(Device::cuda()).set_requires_grad(true);
  Tensor y = dropout(x, 0.2, true, g1), yg = dropout(xg, 0.2, true, g2);
  check_close(yg.detach().to(Device::cpu()), y, 1e-6);  // the same mask: same counters, same Philox
  Tensor dy = rand({3, 1001});
  backward(y, dy);
  backward(yg, dy.detach().to(Device::cuda()));
  check_close(xg.grad().detach().to(Device::cpu()), x.grad(), 1e-6);
}

TEST_CASE("dropout: errors") {
  Tensor x = Tensor::ones({3});
  CHECK(test::error_message([&] { dropout(x, 1.5, true); }) ==
        "[dropout] expected a drop probability p in [0, 1], got 1.5 (p is the fraction of "
        "elements zeroed, e.g. 0.1)");
  CHECK_THROWS_AS(dropout(x, -0.1, true), ConfigError);
  CHECK_THROWS_AS(dropout(x, std::nan(""), true), ConfigError);
  CHECK_THROWS_AS(dropout(x, -0.1, false), ConfigError);  // checked even when not training
  CHECK_THROWS_AS(dropout(Tensor::zeros({3}, DType::i32), 0.1, true), DTypeError);
}
