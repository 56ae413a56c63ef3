// tests/train/test_training_loop.cpp — the pieces together on a Module: named parameters into
// decay groups, backward, clip_grad_norm, a schedule, AdamW / SGD steps, zero_grad.
#include "helpers.h"
#include "models/module.h"
#include "train/adamw.h"
#include "train/clip_grad_norm.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

using namespace mase;
using namespace mase::train;

namespace {
// y = x·wᵀ + b, registered under HF-like names: "dense.weight", "dense.bias"
struct Affine : nn::Module {
  Tensor weight, bias;
  Affine() {
    register_parameter("weight", weight, Tensor::zeros({1, 3}));
    register_parameter("bias", bias, Tensor::zeros({1}));
  }
  std::string type_name() const override { return "Affine"; }
  Tensor forward(const Tensor& x) override { return linear(x, weight, bias); }
};
struct Regressor : nn::Module {
  std::shared_ptr<Affine> dense;
  Regressor() { register_module("dense", dense, std::make_shared<Affine>()); }
  std::string type_name() const override { return "Regressor"; }
  Tensor forward(const Tensor& x) override { return (*dense)(x); }
};

// Fits y = 2·x0 − 1·x1 + 0.5·x2 + 0.3 on 64 fixed points; returns the final loss.
double fit(Regressor& model, Optimizer& opt, const LrSchedule& schedule, int steps) {
  Generator g(7);
  Tensor x = Tensor::empty({64, 3});
  uniform_(x, -1, 1, g);
  Tensor y;
  {
    NoGradGuard no_grad;
    y = linear(x, Tensor::from({2, -1, 0.5}, {1, 3}), Tensor::from({0.3}, {1}));
  }
  double loss_value = 0;
  for (int step = 0; step < steps; ++step) {
    Tensor d = model(x) - y;
    Tensor loss = mean(d * d);
    loss_value = loss.item();
    backward(loss);
    clip_grad_norm(opt, 1.0);
    opt.set_lr_factor(schedule.factor(step));
    opt.step();
    opt.zero_grad();
  }
  return loss_value;
}
}  // namespace

TEST_CASE("training loop: AdamW with warm-up and clipping fits a linear model") {
  Regressor model;
  AdamW opt(model.named_parameters(), {.lr = 0.05, .weight_decay = 0.0});
  REQUIRE(opt.param_groups().size() == 2);  // dense.weight decays, dense.bias does not
  CHECK(opt.param_groups()[1].params[0].first == "dense.bias");
  double loss = fit(model, opt, LrSchedule(ScheduleKind::linear, 10, 400), 400);
  CHECK(loss < 1e-6);
  test::check_close(model.dense->weight, {2, -1, 0.5}, 1e-3, 0);
  test::check_close(model.dense->bias, {0.3}, 1e-3, 0);
  CHECK(opt.step_count("dense.weight") == 400);
}

TEST_CASE("training loop: SGD with momentum fits a linear model") {
  Regressor model;
  SGD opt(model.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  double loss = fit(model, opt, LrSchedule(), 300);
  CHECK(loss < 1e-8);
  test::check_close(model.dense->weight, {2, -1, 0.5}, 1e-4, 0);
}
