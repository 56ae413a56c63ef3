// tests/autograd/test_binary.cpp — add/sub/mul/div: values, broadcasting, gradcheck, errors,
// CPU == CUDA.
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_f64;

TEST_CASE("binary ops: hand-checked values with broadcasting") {
  Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from({10, 20, 30}, {3});
  check_close(a + b, {11, 22, 33, 14, 25, 36});
  check_close(a - b, {-9, -18, -27, -6, -15, -24});
  check_close(a * b, {10, 40, 90, 40, 100, 180});
  check_close(b / a, {10, 10, 10, 2.5, 4, 5});
  Tensor col = Tensor::from({1, 2}, {2, 1});
  check_close(a * col, {1, 2, 3, 8, 10, 12});  // (2,3) * (2,1)
  check_close(a + 1.0, {2, 3, 4, 5, 6, 7});
  check_close(10.0 - a, {9, 8, 7, 6, 5, 4});
  check_close(a / 2.0, {0.5, 1, 1.5, 2, 2.5, 3});
}

TEST_CASE("binary ops: gradcheck with broadcasting") {
  for (auto [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}}) {
    Tensor a = random_f64(sa, 1), b = random_f64(sb, 2, 0.5, 2.0);
    CHECK(gradcheck([](const Tensors& x) { return add(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const Tensors& x) { return sub(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const Tensors& x) { return mul(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const Tensors& x) { return div(x[0], x[1]); }, {a, b}));
  }
  Tensor a = random_f64({3, 2}, 3);
  CHECK(gradcheck([](const Tensors& x) { return (x[0] * 3.0 + 1.0) / 2.0 - 0.5; }, {a}));
  CHECK(gradcheck([](const Tensors& x) { return 2.0 - x[0]; }, {a}));
}

TEST_CASE("binary ops: errors name the op and the shapes") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4});
  CHECK(test::error_message([&] { add(a, b); }) ==
        "[add] shapes (2, 3) and (4) do not broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_AS(mul(a, Tensor::zeros({2, 3}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(add(Tensor::zeros({2}, DType::i32), Tensor::zeros({2}, DType::i32)), DTypeError);
}

TEST_CASE("sum_to: sums broadcast dims; a shape that does not broadcast is a ShapeError") {
  Tensor t = Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  check_close(sum_to(t, {3}), {5, 7, 9});
  check_close(sum_to(t, {2, 1}), {6, 15});
  check_close(sum_to(t, {1, 1}), {21});
  // (3, 2) has t's element count but does not broadcast to (2, 3): no silent reshape of t
  CHECK(test::error_message([&] { sum_to(t, {3, 2}); }) ==
        "[sum_to] expected a shape that broadcasts to (2, 3), got (3, 2)");
  CHECK_THROWS_AS(sum_to(t, {1, 2, 3}), ShapeError);  // more dims than t
  CHECK_THROWS_AS(sum_to(t, {2}), ShapeError);
}

TEST_CASE("binary ops: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor a = rand({4, 5}), b = rand({5});
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  for (Fn f : {Fn(add), Fn(sub), Fn(mul), Fn(div)}) {
    Tensor c = f(a, b), g = f(a.detach().to(Device::cuda()), b.detach().to(Device::cuda()));
    check_close(g.detach().to(Device::cpu()), c, 1e-6);
  }
}
