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

TEST_CASE("raw copies refuse a tensor with history in grad mode (runtime/tensor.h's rule)") {
  Tensor x = Tensor::from({1, 2, 3, 4}, {2, 2}).set_requires_grad(true);
  Tensor xt = transpose(x, 0, 1);  // not contiguous: contiguous() would copy
  // x.contiguous() would keep the history when x is packed and drop it when it is not; so
  // every raw copy of a tensor that requires grad is refused, packed or not
  CHECK(test::error_message([&] { (void)xt.contiguous(); }) ==
        "[Tensor::contiguous] this (2, 2) tensor requires grad and a raw copy would drop its "
        "history (use the differentiable op, e.g. contiguous(x) or to_dtype(x, t), or "
        "x.detach().contiguous() when no gradient should flow)");
  CHECK_THROWS_AS((void)x.contiguous(), Error);
  CHECK_THROWS_AS((void)x.clone(), Error);
  CHECK_THROWS_AS((void)x.to(DType::f64), Error);
  CHECK_THROWS_AS((void)x.to(Device::cpu()), Error);
  // the differentiable op keeps the history; detach() says no gradient is wanted
  Tensor y = contiguous(xt);
  backward(sum(y * 2.0));
  check_close(x.grad(), {2, 2, 2, 2});
  CHECK(!xt.detach().contiguous().requires_grad());
  check_close(xt.detach().contiguous(), {1, 3, 2, 4});
  // without history to drop (no grad mode, or a tensor that does not require grad) they copy
  {
    NoGradGuard no_grad;
    check_close(xt.contiguous(), {1, 3, 2, 4});
  }
  check_close(Tensor::from({5, 6}, {2}).clone(), {5, 6});
  CHECK(x.to_vector<double>() == std::vector<double>{1, 2, 3, 4});  // reading values is fine
}

TEST_CASE("mul_ scales in place without recording") {
  // used by clip_grad_norm to scale gradients: (1, -2, 3) * 0.5 = (0.5, -1, 1.5)
  Tensor g = Tensor::from({1, -2, 3}, {3});
  mul_(g, 0.5);
  check_close(g, {0.5, -1, 1.5});
  CHECK(g.grad_fn() == nullptr);
  Tensor t = transpose(Tensor::from({1, 2, 3, 4}, {2, 2}), 0, 1);
  CHECK_THROWS_AS(mul_(t, 2.0), Error);  // not packed: refuses instead of scaling a copy
}
