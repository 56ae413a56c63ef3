// tests/train/test_sgd.cpp — SGD: hand-computed steps (momentum, weight decay, nesterov,
// dampening), state, errors. (The PyTorch oracle is test_optim_fixture.cpp.)
#include "helpers.h"
#include "optim_helpers.h"
#include "train/sgd.h"

using namespace mase;
using namespace mase::train;
using mase::test::check_close;
using mase::test::param;
using mase::test::set_grad;

TEST_CASE("SGD: hand-computed steps with momentum and weight decay") {
  // lr 0.1, μ 0.9, wd 0.1, p = [1, -1], g = [0.5, 0.5] both steps
  Tensor p = param({1, -1});
  SGD opt({{"w", p}}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
  // step 1: g' = g + 0.1·p = [0.6, 0.4];  b = g' (first step);  p ← p − 0.1·b = [0.94, -1.04]
  set_grad(p, {0.5, 0.5});
  opt.step();
  check_close(p, {0.94, -1.04});
  check_close(opt.state_dict().at("w.momentum_buffer"), {0.6, 0.4});
  // step 2: g' = [0.5 + 0.094, 0.5 − 0.104] = [0.594, 0.396]
  //         b = 0.9·[0.6, 0.4] + g' = [1.134, 0.756];  p ← p − 0.1·b = [0.8266, -1.1156]
  set_grad(p, {0.5, 0.5});
  opt.step();
  check_close(p, {0.8266, -1.1156});
  check_close(opt.state_dict().at("w.momentum_buffer"), {1.134, 0.756});
}

TEST_CASE("SGD: nesterov steps along g + μ·b") {
  // lr 0.1, μ 0.9, wd 0.1, p = [1, -1], g = [0.5, 0.5]
  Tensor p = param({1, -1});
  SGD opt({{"w", p}}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true});
  // step 1: g' = [0.6, 0.4], b = g', d = g' + 0.9·b = [1.14, 0.76], p = [0.886, -1.076]
  set_grad(p, {0.5, 0.5});
  opt.step();
  check_close(p, {0.886, -1.076});
  // step 2: g' = [0.5886, 0.3924], b = 0.9·[0.6, 0.4] + g' = [1.1286, 0.7524]
  //         d = g' + 0.9·b = [1.60434, 1.06956], p = [0.886 − 0.160434, -1.076 − 0.106956]
  set_grad(p, {0.5, 0.5});
  opt.step();
  check_close(p, {0.725566, -1.182956});
}

TEST_CASE("SGD: dampening scales the gradient into the buffer after the first step") {
  // lr 0.1, μ 0.9, dampening 0.5, wd 0, g = 0.5:
  //   step 1: b = g = 0.5 (no dampening on the first step), p = 1 − 0.05 = 0.95
  //   step 2: b = 0.9·0.5 + 0.5·0.5 = 0.7, p = 0.95 − 0.07 = 0.88
  Tensor p = param({1});
  SGD opt({{"w", p}}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  set_grad(p, {0.5});
  opt.step();
  check_close(p, {0.95});
  set_grad(p, {0.5});
  opt.step();
  check_close(p, {0.88});
}

TEST_CASE("SGD: plain SGD keeps no buffer and skips frozen parameters") {
  // lr 0.5, wd 0: p ← p − 0.5·g = [1 − 0.5·2, 2 − 0.5·(-2)] = [0, 3]
  Tensor p = param({1, 2}), frozen = param({7});
  frozen.set_requires_grad(false);
  SGD opt({{"w", p}, {"frozen", frozen}}, {.lr = 0.5});
  set_grad(p, {2, -2});
  set_grad(frozen, {1});
  opt.step();
  check_close(p, {0, 3});
  check_close(frozen, {7});
  auto sd = opt.state_dict();
  CHECK(sd.size() == 1);  // just "w.step"
  CHECK(sd.at("w.step").item() == 1);
}

TEST_CASE("SGD: groups take their own lr and weight decay") {
  // group a: lr 0.1 wd 0 → p = 1 − 0.1·1 = 0.9;  group b: lr 0.2 (default) wd 0.5 →
  // g' = 1 + 0.5·1 = 1.5, p = 1 − 0.2·1.5 = 0.7.  set_lr_factor(0.5) halves both lrs.
  Tensor a = param({1}), b = param({1});
  std::vector<ParamGroup> groups{ParamGroup{{{"a", a}}, 0.1, 0.0},
                                 ParamGroup{{{"b", b}}, std::nullopt, 0.5}};
  SGD opt(groups, {.lr = 0.2});
  set_grad(a, {1});
  set_grad(b, {1});
  opt.step();
  check_close(a, {0.9});
  check_close(b, {0.7});
  opt.set_lr_factor(0.5);
  CHECK(opt.lr(0) == doctest::Approx(0.05));
  CHECK(opt.lr(1) == doctest::Approx(0.1));
  opt.set_lr(0.3);
  CHECK(opt.lr(0) == 0.3);
  CHECK(opt.lr(1) == 0.3);
}

TEST_CASE("SGD: bad options are ConfigErrors") {
  nn::NamedTensors ps{{"w", param({1})}};
  CHECK_THROWS_AS(SGD(ps, {.lr = -0.1}), ConfigError);
  CHECK_THROWS_AS(SGD(ps, {.momentum = -0.9}), ConfigError);
  CHECK_THROWS_AS(SGD(ps, {.dampening = -1}), ConfigError);
  SGDOptions bad{.momentum = 0.9, .dampening = 0.1, .nesterov = true};
  CHECK(test::error_message([&] { SGD(ps, bad); }) ==
        "[SGD] expected momentum > 0 and dampening == 0 for nesterov, got momentum 0.9 and "
        "dampening 0.1");
  CHECK_THROWS_AS(SGD(ps, {.nesterov = true}), ConfigError);
}
