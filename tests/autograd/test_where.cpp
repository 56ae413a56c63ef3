// tests/autograd/test_where.cpp — where and masked_fill: values with broadcasting of all three
// operands, gradients summed to each shape, gradcheck, errors.
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_f64;

namespace {
Tensor mask_of(const std::vector<uint8_t>& v, const Shape& s) { return Tensor::from(v, s); }
}  // namespace

TEST_CASE("where: hand-checked values and gradients with broadcasting") {
  Tensor cond = mask_of({1, 0, 1, 0, 0, 7}, {2, 3});  // any nonzero is true
  Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor b = Tensor::from({10, 20, 30}, {3}).set_requires_grad(true);
  Tensor y = where(cond, a, b);
  check_close(y, {1, 20, 3, 10, 20, 6});
  backward(sum(y));
  check_close(a.grad(), {1, 0, 1, 0, 0, 1});  // da = cond
  check_close(b.grad(), {1, 2, 0});           // db = Σ_rows (1 - cond) = [0+1, 1+1, 0+0]
  // cond (2, 1) picks a whole row; a (1, 3) and b (2, 3)
  Tensor y2 = where(mask_of({0, 1}, {2, 1}), Tensor::from({7, 8, 9}, {1, 3}),
                    Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  check_close(y2, {1, 2, 3, 7, 8, 9});
}

TEST_CASE("masked_fill: hand-checked values and gradient") {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor y = masked_fill(x, mask_of({0, 1, 0}, {3}), -100.0);  // column 1 masked in both rows
  check_close(y, {1, -100, 3, 4, -100, 6});
  backward(sum(y * 2.0));
  check_close(x.grad(), {2, 0, 2, 2, 0, 2});  // masked elements get no gradient
  // the attention-mask shape: scores (B, NH, T, T) = (1, 2, 2, 2), mask (B, 1, 1, T)
  Tensor s = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  check_close(masked_fill(s, mask_of({0, 1}, {1, 1, 1, 2}), -1e4),
              {1, -1e4, 3, -1e4, 5, -1e4, 7, -1e4});
}

TEST_CASE("where: gradcheck in f64") {
  Tensor cond = mask_of({1, 0, 0, 1, 1, 1, 0, 0}, {2, 1, 4});
  Tensor a = random_f64({3, 1}, 1), b = random_f64({2, 3, 4}, 2);  // all three broadcast to (2, 3, 4)
  CHECK(gradcheck([cond](const Tensors& x) { return where(cond, x[0], x[1]); }, {a, b}));
  Tensor c2 = mask_of({1, 0, 1, 1, 0, 0}, {2, 3});
  Tensor a2 = random_f64({2, 3}, 3), b2 = random_f64({2, 3}, 4);
  CHECK(gradcheck([c2](const Tensors& x) { return where(c2, x[0], x[1]); }, {a2, b2}));
  auto fill_rows = [](const Tensors& x) { return masked_fill(x[0], mask_of({1, 0, 0}, {3, 1}), 2.5); };
  CHECK(gradcheck(fill_rows, {random_f64({3, 4}, 5)}));
}

TEST_CASE("where: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor cond = mask_of({1, 0, 0, 1, 1, 0, 1, 0}, {2, 1, 4});
  Tensor a = rand({3, 1}).set_requires_grad(true), b = rand({2, 3, 4}).set_requires_grad(true);
  Tensor ag = a.detach().to(Device::cuda()).set_requires_grad(true);
  Tensor bg = b.detach().to(Device::cuda()).set_requires_grad(true);
  Tensor y = where(cond, a, b), yg = where(cond.detach().to(Device::cuda()), ag, bg);
  check_close(yg.detach().to(Device::cpu()), y, 0, 0);
  backward(sum(y));
  backward(sum(yg));
  check_close(ag.grad().detach().to(Device::cpu()), a.grad(), 1e-6);
  check_close(bg.grad().detach().to(Device::cpu()), b.grad(), 1e-6);
  Tensor x = rand({2, 5});
  check_close(
      masked_fill(x.detach().to(Device::cuda()), mask_of({1, 0, 0, 1, 0}, {5}).detach().to(Device::cuda()), -3.0)
          .detach().to(Device::cpu()),
      masked_fill(x, mask_of({1, 0, 0, 1, 0}, {5}), -3.0), 0, 0);
}

TEST_CASE("where: errors") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({2, 3});
  CHECK(test::error_message([&] { where(Tensor::zeros({2, 3}), a, b); }) ==
        "[where] expected cond to be u8, got f32");
  CHECK_THROWS_AS(where(mask_of({1, 0}, {2}), a, b), ShapeError);  // (2) vs (2, 3)
  CHECK_THROWS_AS(where(mask_of({1}, {1}), a, Tensor::zeros({2, 3}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(where(mask_of({1}, {1}), a, test::fake_cuda({2, 3})), DeviceError);
  CHECK(test::error_message([&] {
          masked_fill(a, mask_of({1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}, {2, 2, 3}), 0.0);
        }) == "[masked_fill] expected a mask that broadcasts to x (2, 3), got (2, 2, 3)");
  CHECK_THROWS_AS(masked_fill(a, Tensor::zeros({3}, DType::i32), 0.0), DTypeError);
}
