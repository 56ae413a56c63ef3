// tests/train/test_clip_grad_norm.cpp — total norm, clipping, the no-op case, determinism.
#include <cmath>

#include "helpers.h"
#include "optim_helpers.h"
#include "runtime/parallel.h"
#include "train/clip_grad_norm.h"

using namespace mase;
using namespace mase::train;
using mase::test::check_close;
using mase::test::param;
using mase::test::set_grad;

TEST_CASE("clip_grad_norm: the norm of all gradients together, scaled when above max_norm") {
  // grads [3, 0] and [0, 4, 0]: norm √(9 + 16) = 5. max_norm 1: coef = 1/(5 + 1e-6),
  // grads → [0.6, 0] and [0, 0.8, 0] (times 5/(5 + 1e-6), i.e. less than 1e-6 off)
  Tensor a = param({1, 1}), b = param({1, 1, 1}), none = param({9});
  set_grad(a, {3, 0});
  set_grad(b, {0, 4, 0});
  double norm = clip_grad_norm(std::vector<Tensor>{a, b, none}, 1.0);
  CHECK(norm == 5.0);  // before clipping, exact
  check_close(a.grad(), {3 / (5 + 1e-6), 0});
  check_close(b.grad(), {0, 4 / (5 + 1e-6), 0});
  CHECK(!none.grad().defined());  // skipped
  CHECK(grad_norm({a, b}) == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("clip_grad_norm: no-op when the norm is within max_norm") {
  Tensor a = param({0, 0}), b = param({0});
  set_grad(a, {1, 2});
  set_grad(b, {-2});  // norm √(1 + 4 + 4) = 3
  CHECK(clip_grad_norm(nn::NamedTensors{{"a", a}, {"b", b}}, 3.5) == 3.0);
  check_close(a.grad(), {1, 2}, 0, 0);  // untouched, exactly
  check_close(b.grad(), {-2}, 0, 0);
  // at max_norm == norm the coefficient 3/(3 + 1e-6) still scales (as PyTorch); f64, so the
  // 3e-7 relative change is far above rounding
  Tensor d = test::random_param({2}, 3, DType::f64);
  d.set_grad(Tensor::from(std::vector<double>{1, 2}, {2}));
  CHECK(clip_grad_norm(std::vector<Tensor>{d}, std::sqrt(5.0)) == std::sqrt(5.0));  // norm √(1 + 4)
  const double coef = std::sqrt(5.0) / (std::sqrt(5.0) + 1e-6);
  check_close(d.grad(), {coef, 2 * coef}, 1e-14, 0);
  // no gradients at all: norm 0
  CHECK(clip_grad_norm(std::vector<Tensor>{param({1})}, 1.0) == 0.0);
}

TEST_CASE("clip_grad_norm: f64, large gradients, deterministic on any thread count") {
  // 300 001 elements of 0.5 (f32) and 1000 of 2 (f64): Σg² = 300001·0.25 + 1000·4, exact in
  // double, so the norm must be exactly its square root.
  Tensor big = param(std::vector<float>(300001, 0.5f));
  Tensor small = test::random_param({1000}, 1, DType::f64);
  big.set_grad(Tensor::full({300001}, 0.5));
  small.set_grad(Tensor::full({1000}, 2.0, DType::f64));
  const double expect = std::sqrt(300001 * 0.25 + 1000 * 4.0);
  CHECK(grad_norm({big, small}) == expect);
  // random gradients: the same bits on 1 thread and on all of them
  big.set_grad(randn({300001}));
  const int threads = num_threads();
  set_num_threads(1);
  const double one = grad_norm({big, small});
  set_num_threads(threads);
  CHECK(grad_norm({big, small}) == one);
}

TEST_CASE("clip_grad_norm: non-finite norms are returned and nothing is scaled") {
  Tensor a = param({0, 0});
  set_grad(a, {INFINITY, 1});
  CHECK(std::isinf(clip_grad_norm(std::vector<Tensor>{a}, 1.0)));
  CHECK(a.grad().to_vector<float>()[1] == 1.0f);
}

TEST_CASE("clip_grad_norm: max_norm must be positive") {
  Tensor a = param({0});
  set_grad(a, {1});
  CHECK(test::error_message([&] { clip_grad_norm(std::vector<Tensor>{a}, 0.0); }) ==
        "[clip_grad_norm] expected max_norm > 0, got 0");
  CHECK_THROWS_AS(clip_grad_norm(std::vector<Tensor>{a}, -1.0), ConfigError);
}

TEST_CASE("clip_grad_norm: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor a = param(std::vector<float>(70000, 0.f)), b = param({0, 0, 0});
  a.set_grad(randn({70000}));
  set_grad(b, {3, -4, 12});
  Tensor ag = test::clone_param(a.detach().to(Device::cuda())), bg = test::clone_param(b.detach().to(Device::cuda()));
  ag.set_grad(a.grad().detach().to(Device::cuda()));
  bg.set_grad(b.grad().detach().to(Device::cuda()));
  const double cpu = clip_grad_norm(std::vector<Tensor>{a, b}, 2.0);
  const double gpu = clip_grad_norm(std::vector<Tensor>{ag, bg}, 2.0);
  CHECK(gpu == doctest::Approx(cpu).epsilon(1e-12));
  check_close(ag.grad().detach().to(Device::cpu()), a.grad(), 1e-7, 1e-6);
  check_close(bg.grad().detach().to(Device::cpu()), b.grad(), 1e-7, 1e-6);
}
