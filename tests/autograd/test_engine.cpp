// tests/autograd/test_engine.cpp — the tape: accumulation, shared subexpressions, no_grad,
// seeds, freed graphs.
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;

TEST_CASE("a tensor used twice receives both gradients") {
  Tensor x = Tensor::from({3.0f}, {1}).set_requires_grad(true);
  Tensor y = x * x + x;  // dy/dx = 2x + 1 = 7
  backward(sum(y));
  check_close(x.grad(), {7});
}

TEST_CASE("shared subexpressions: gradients flow through every path once") {
  Tensor a = Tensor::from({2.0f}, {1}).set_requires_grad(true);
  Tensor b = a * 3.0;  // b = 3a
  Tensor c = b * b;    // c = 9a²
  Tensor d = c + b;    // d = 9a² + 3a  -> dd/da = 18a + 3 = 39
  backward(sum(d));
  check_close(a.grad(), {39});
}

TEST_CASE("gradients accumulate across backward calls until zeroed") {
  Tensor w = Tensor::from({1.0f, 2.0f}, {2}).set_requires_grad(true);
  backward(sum(w * 2.0));
  backward(sum(w * 3.0));
  check_close(w.grad(), {5, 5});
  fill_(w.grad(), 0.0);
  backward(sum(w));
  check_close(w.grad(), {1, 1});
}

TEST_CASE("no_grad records nothing and detach cuts history") {
  Tensor w = Tensor::from({1.0f}, {1}).set_requires_grad(true);
  {
    NoGradGuard ng;
    Tensor y = w * 2.0;
    CHECK(!y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  Tensor y = (w * 2.0).detach();
  CHECK(!y.requires_grad());
  CHECK_THROWS_AS(backward(sum(y)), AutogradError);
}

TEST_CASE("non-scalar backward needs a seed") {
  Tensor x = Tensor::from({1, 2, 3}, {3}).set_requires_grad(true);
  Tensor y = x * 2.0;
  CHECK(test::error_message([&] { backward(y); }) ==
        "[backward] expected a scalar (1 element) or an explicit seed gradient, got shape (3) "
        "(pass seed = d(loss)/d(root))");
  backward(y, Tensor::from({1, 10, 100}, {3}));
  check_close(x.grad(), {2, 20, 200});
  CHECK_THROWS_AS(backward(x * 2.0, Tensor::ones({2})), ShapeError);
}

TEST_CASE("a second backward through a freed graph is an error unless retain_graph") {
  Tensor x = Tensor::from({1.0f}, {1}).set_requires_grad(true);
  Tensor y = sum(exp(x));
  backward(y);
  CHECK_THROWS_AS(backward(y), AutogradError);
  Tensor z = sum(exp(x));
  backward(z, Tensor(), /*retain_graph=*/true);
  backward(z);
  check_close(x.grad(), {3 * std::exp(1.0)}, 1e-5);
}
