// tests/autograd/test_unary.cpp — neg, exp, log, sqrt, tanh, relu: hand values, gradients
// (relu's at 0 is 0, as in PyTorch), views as inputs, gradcheck, errors.
#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_f64;

namespace {
using UnaryFn = Tensor (*)(const Tensor&);
}  // namespace

TEST_CASE("unary ops: hand-checked values") {
  check_close(neg(Tensor::from({1, -2, 0}, {3})), {-1, 2, 0});
  check_close(exp(Tensor::from({0, std::log(2.0f)}, {2})), {1, 2});
  check_close(log(Tensor::from({1, static_cast<float>(M_E), 8}, {3})), {0, 1, std::log(8.0)});
  check_close(sqrt(Tensor::from({4, 9, 0}, {3})), {2, 3, 0});
  check_close(tanh(Tensor::from({0, std::atanh(0.5f)}, {2})), {0, 0.5});
  check_close(relu(Tensor::from({-1, 0, 2}, {3})), {0, 0, 2});
  // a transposed view is read in its logical order: xᵀ of [[1 2] [3 4]] = [[1 3] [2 4]]
  check_close(neg(transpose(Tensor::from({1, 2, 3, 4}, {2, 2}), 0, 1)), {-1, -3, -2, -4});
  check_close(-Tensor::from({5}, {1}), {-5});
}

TEST_CASE("unary ops: hand-checked gradients") {
  auto grad_of = [](UnaryFn f, std::initializer_list<float> xs) {
    Tensor x = Tensor::from(xs, {static_cast<int64_t>(xs.size())}).set_requires_grad(true);
    backward(sum(f(x)));
    return x.grad();
  };
  check_close(grad_of(neg, {1, 2}), {-1, -1});
  check_close(grad_of(exp, {0, std::log(3.0f)}), {1, 3});         // d eˣ = eˣ
  check_close(grad_of(log, {2, 4}), {0.5, 0.25});                 // d ln x = 1/x
  check_close(grad_of(sqrt, {4, 9}), {0.25, 1.0 / 6});            // d √x = 1/(2√x)
  check_close(grad_of(tanh, {0, std::atanh(0.5f)}), {1, 0.75});   // 1 - tanh²
  check_close(grad_of(relu, {-1, 0, 3}), {0, 0, 1});              // [x > 0]
}

TEST_CASE("unary ops: gradcheck in f64") {
  for (UnaryFn f : {UnaryFn(neg), UnaryFn(exp), UnaryFn(tanh)})
    CHECK(gradcheck([f](const Tensors& t) { return f(t[0]); }, {random_f64({3, 4}, 1, -2, 2)}));
  for (UnaryFn f : {UnaryFn(log), UnaryFn(sqrt)})  // positive inputs
    CHECK(gradcheck([f](const Tensors& t) { return f(t[0]); }, {random_f64({3, 4}, 2, 0.5, 3)}));
  // relu away from its kink: |x| >= 0.1, much more than eps
  Tensor x = random_f64({3, 4}, 3, 0.1, 1);
  {
    NoGradGuard ng;
    double* p = x.data<double>();
    for (int i = 0; i < 12; i += 2) p[i] = -p[i];
  }
  CHECK(gradcheck([](const Tensors& t) { return relu(t[0]); }, {x}));
  CHECK(gradcheck([](const Tensors& t) { return tanh(exp(transpose(t[0], 0, 1))); },
                  {random_f64({3, 2}, 4, -1, 1)}));
}

TEST_CASE("unary ops: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({5, 7});
  for (UnaryFn f :
       {UnaryFn(neg), UnaryFn(exp), UnaryFn(log), UnaryFn(sqrt), UnaryFn(tanh), UnaryFn(relu)}) {
    Tensor xc = (x - 0.2).detach().set_requires_grad(true);  // some negatives for relu
    if (f == UnaryFn(log) || f == UnaryFn(sqrt)) xc = (x + 0.1).detach().set_requires_grad(true);
    Tensor xg = xc.detach().to(Device::cuda()).set_requires_grad(true);
    Tensor y = f(xc), yg = f(xg);
    check_close(yg.detach().to(Device::cpu()), y, 1e-5, 1e-5);
    backward(sum(y));
    backward(sum(yg));
    check_close(xg.grad().detach().to(Device::cpu()), xc.grad(), 1e-5, 1e-5);
  }
}

TEST_CASE("unary ops: errors") {
  CHECK(test::error_message([] { exp(Tensor::zeros({2}, DType::i32)); }) ==
        "[exp] expected input to be f32 or f64, got i32");
  CHECK_THROWS_AS(relu(Tensor::zeros({2}, DType::u8)), DTypeError);
  CHECK_THROWS_AS(neg(Tensor()), Error);
}
