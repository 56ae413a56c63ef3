// tests/autograd/test_reduce.cpp — sum and mean: all elements, one dim, several non-adjacent
// dims, negative dims, keepdim, views as inputs; hand values, a loop oracle, gradcheck, errors.
// amax over one dim: hand values, ties sharing the gradient, NaN skipped, gradcheck, errors.
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"

using namespace mase;
using mase::test::arange;
using mase::test::check_close;
using mase::test::random_f64;

TEST_CASE("sum and mean: hand-checked values and shapes") {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  check_close(sum(x), {21});
  CHECK(sum(x).shape() == Shape{});
  check_close(sum(x, {0}), {5, 7, 9});    // column sums
  check_close(sum(x, {1}), {6, 15});      // row sums: 1+2+3, 4+5+6
  check_close(sum(x, {-1}), {6, 15});
  CHECK(sum(x, {-1}, true).shape() == Shape{2, 1});
  check_close(mean(x), {3.5});            // 21 / 6
  check_close(mean(x, {1}), {2, 5});
  check_close(mean(x, {0}, true), {2.5, 3.5, 4.5});
  CHECK(mean(x, {0}, true).shape() == Shape{1, 3});
  // x (2, 3, 4) = 0..23, x[i, j, k] = 12i + 4j + k. Over dims {0, 2} (not adjacent):
  // Σ_i Σ_k (12i + 4j + k) = 4·12 + 8·4j + 2·6 = 60 + 32j  -> [60, 92, 124]
  Tensor y = arange({2, 3, 4});
  check_close(sum(y, {0, 2}), {60, 92, 124});
  CHECK(sum(y, {2, 0}, true).shape() == Shape{1, 3, 1});
  check_close(mean(y, {0, 2}), {7.5, 11.5, 15.5});  // / 8
  check_close(sum(y, {0, 1}), {60, 66, 72, 78});     // 12·3 + 4·(0+1+2)·2 + 6k = 60 + 6k
}

TEST_CASE("sum: views and 0-d inputs keep their offsets") {
  Tensor x = Tensor::from({1, 2, 3}, {3});
  // a 0-d select at offset 2: its sum is itself (was 1, the element at offset 0: fixed)
  check_close(sum(select(x, 0, 2)), {3});
  check_close(mean(select(x, 0, 1)), {2});
  check_close(sum(slice(x, 0, 1, 3), {}), {2, 3});  // no dim reduced: the values themselves
  // a transposed view: sum over its dim 0 = the rows of the original
  Tensor m = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  check_close(sum(transpose(m, 0, 1), {0}), {6, 15});
}

TEST_CASE("sum: large reductions agree with a loop oracle") {
  // 0 + 1 + ... + (n - 1) = n(n - 1)/2, exact in f64: crosses the parallel chunked path
  const int64_t n = 300001;
  check_close(sum(arange({n}, DType::f64)), {n * (n - 1) / 2.0}, 0, 0);
  // column sums over (5, 3, 300): inner > 256 spans two column blocks
  Tensor x = random_f64({5, 3, 300}, 4).detach();
  auto v = x.to_vector<double>();
  std::vector<double> expected(5 * 300, 0.0);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 300; ++k) expected[i * 300 + k] += v[(i * 3 + j) * 300 + k];
  check_close(sum(x, {1}), expected, 1e-12);
}

TEST_CASE("sum and mean: gradients") {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  backward(mean(x, {1}), Tensor::from({3, 6}, {2}));
  check_close(x.grad(), {1, 1, 1, 2, 2, 2});  // dx = dy / 3 spread over each row
  std::vector<std::pair<std::vector<int64_t>, bool>> cases{
      {{0}, false}, {{1}, true}, {{-1}, false}, {{0, 2}, false}, {{0, 2}, true}, {{0, 1, 2}, false},
      {{1, 3}, false}, {{3, 0}, true}};
  for (const auto& [dims, keep] : cases) {
    INFO("dims " << Shape(dims) << " keepdim " << keep);
    CHECK(gradcheck([&](const Tensors& t) { return sum(t[0], dims, keep); }, {random_f64({2, 3, 2, 2}, 1)}));
    CHECK(gradcheck([&](const Tensors& t) { return mean(t[0], dims, keep); }, {random_f64({2, 3, 2, 2}, 2)}));
  }
  CHECK(gradcheck([](const Tensors& t) { return sum(t[0]); }, {random_f64({3, 4}, 3)}));
  CHECK(gradcheck([](const Tensors& t) { return mean(t[0]); }, {random_f64({3, 4}, 4)}));
  CHECK(gradcheck([](const Tensors& t) { return sum(transpose(t[0], 0, 1), {1}); }, {random_f64({3, 4}, 5)}));
}

TEST_CASE("sum and mean: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({4, 3, 300});
  Tensor xg = x.detach().to(Device::cuda());
  check_close(sum(xg).detach().to(Device::cpu()), sum(x), 1e-3);
  check_close(sum(xg, {1}).detach().to(Device::cpu()), sum(x, {1}), 1e-5);
  check_close(sum(xg, {0, 2}, true).detach().to(Device::cpu()), sum(x, {0, 2}, true), 1e-4);
  check_close(mean(xg, {-1}).detach().to(Device::cpu()), mean(x, {-1}), 1e-6);
  Tensor b = rand({300}).set_requires_grad(true);  // a broadcast gradient goes through sum_to
  Tensor bg = b.detach().to(Device::cuda()).set_requires_grad(true);
  backward(sum(x * b));
  backward(sum(xg * bg));
  check_close(bg.grad().detach().to(Device::cpu()), b.grad(), 1e-4);
}

// cuda/column_sums.cuh cuts the rows into chunks of 128 summed by separate blocks: tall
// matrices with a partial last chunk, one chunk, one row, and several outer slices.
TEST_CASE("sum: column sums of tall matrices, CPU == CUDA") {
  if (!test::have_gpu()) return;
  for (const Shape& s : {Shape{8197, 130}, Shape{128, 33}, Shape{129, 2}, Shape{1, 40},
                         Shape{3, 700, 65}}) {
    CAPTURE(s);
    Tensor x = rand(s);
    Tensor xg = x.detach().to(Device::cuda());
    const int64_t dim = s.size() == 3 ? 1 : 0;
    check_close(sum(xg, {dim}).detach().to(Device::cpu()), sum(x, {dim}), 1e-5, 1e-6);
    const Tensor twice = sum(xg, {dim}).detach().to(Device::cpu());  // a fixed order: same bits
    check_close(sum(xg, {dim}).detach().to(Device::cpu()), twice, 0, 0);
  }
}

TEST_CASE("sum and mean: errors") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK(test::error_message([&] { sum(x, {2}); }) ==
        "[sum] dim 2 out of range for a 2-d tensor (expected -2..1)");
  CHECK(test::error_message([&] { mean(x, {1, -1}); }) == "[mean] dims must be distinct");
  CHECK_THROWS_AS(mean(x, {-3}), ShapeError);
  CHECK_THROWS_AS(sum(Tensor::zeros({2}, DType::i32)), DTypeError);
}

TEST_CASE("amax: hand-checked values, ties and NaN") {
  Tensor x = Tensor::from({1, 5, 3, 4, -2, 4}, {2, 3});
  check_close(amax(x, 1), {5, 4});     // max(1, 5, 3), max(4, -2, 4)
  check_close(amax(x, 0), {4, 5, 4});  // column maxima
  check_close(amax(x, -1, true), {5, 4});
  CHECK(amax(x, -1, true).shape() == Shape{2, 1});
  CHECK(amax(x, 0).shape() == Shape{3});
  // rows longer than 16 take the vectorised path: the max in the tail and in the body
  Tensor r = arange({2, 37});  // row i is 37i .. 37i + 36
  check_close(amax(r, 1), {36, 73});
  check_close(amax(transpose(r, 0, 1), 0), {36, 73});  // a transposed view
  // NaN is skipped (fmax), a row of -inf stays -inf
  const double inf = INFINITY, nan = NAN;
  auto m = amax(Tensor::from(std::vector<double>{1, nan, 2, -inf, -inf, -inf}, {2, 3}), 1)
               .to_vector<double>();
  CHECK(m[0] == 2);
  CHECK(m[1] == -inf);
}

TEST_CASE("amax: gradients") {
  // ties share dy: row (4, -2, 4) has two maxima, each gets dy / 2
  Tensor x = Tensor::from({1, 5, 3, 4, -2, 4}, {2, 3}).set_requires_grad(true);
  backward(amax(x, 1), Tensor::from({10, 6}, {2}));
  check_close(x.grad(), {0, 10, 0, 3, 0, 3});
  // away from ties the max is differentiable: gradcheck over every dim, with and without keepdim
  for (int64_t dim : {0, 1, 2, -1})
    for (bool keep : {false, true}) {
      INFO("dim " << dim << " keepdim " << keep);
      CHECK(gradcheck([&](const Tensors& t) { return amax(t[0], dim, keep); },
                      {random_f64({3, 4, 5}, 7 + dim)}));
    }
}

TEST_CASE("amax: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({4, 3, 300}).set_requires_grad(true);
  test::check_cpu_cuda([](const Tensors& t) { return amax(t[0], 1); }, {x});
  test::check_cpu_cuda([](const Tensors& t) { return amax(t[0], -1, true); }, {x});
}

TEST_CASE("amax: errors") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK(test::error_message([&] { amax(x, 2); }) ==
        "[amax] dim 2 out of range for a 2-d tensor (expected -2..1)");
  CHECK_THROWS_AS(amax(Tensor::zeros({2}, DType::i32), 0), DTypeError);
}

TEST_CASE("amax: an empty reduced dim is a ShapeError") {
  // a max of nothing has no value (torch.amax raises); it gave -inf. Checked before the
  // backend is chosen, so CUDA refuses it alike. An empty dim that is kept is fine.
  Tensor x = Tensor::zeros({2, 0});
  CHECK(test::error_message([&] { amax(x, 1); }) ==
        "[amax] expected a non-empty dim 1, got shape (2, 0) (a max of no elements has no value)");
  CHECK_THROWS_AS(amax(x, -1, true), ShapeError);
  CHECK_THROWS_AS(amax(Tensor::zeros({0}), 0), ShapeError);
  CHECK(amax(x, 0).shape() == Shape{0});
  CHECK(amax(Tensor::zeros({0, 3}), 1, true).shape() == Shape{0, 1});
  CHECK_THROWS_AS(amax(test::fake_cuda({2, 0}), 1), ShapeError);  // no kernel runs
}

TEST_CASE("sum and mean over an empty dim: 0 and NaN as in PyTorch") {
  // unlike a max, a sum has an identity (0); the mean is 0 · (1/0) = NaN, as torch.mean gives
  Tensor e = Tensor::zeros({2, 0}).set_requires_grad(true);
  check_close(sum(e, {1}), {0, 0});
  const std::vector<double> m = mean(e, {1}).to_vector<double>();
  CHECK((m.size() == 2 && std::isnan(m[0]) && std::isnan(m[1])));
  backward(sum(mean(e, {1}) * 0.0));
  CHECK(e.grad().shape() == Shape{2, 0});
}
