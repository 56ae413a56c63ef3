// tests/train/test_adamw.cpp — AdamW: hand-computed steps, decay groups, fused == reference,
// frozen parameters, CPU == CUDA, errors. (The PyTorch oracle is test_optim_fixture.cpp.)
#include "helpers.h"
#include "optim_helpers.h"
#include "train/adamw.h"

using namespace mase;
using namespace mase::train;
using mase::test::check_close;
using mase::test::param;
using mase::test::set_grad;

TEST_CASE("AdamW: two hand-computed steps with weight decay and bias correction") {
  // lr 0.1, β1 0.9, β2 0.999, eps 1e-8, wd 0.1; p = [1, -2]
  Tensor p = param({1, -2});
  AdamW opt({{"w", p}}, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1},
            nullptr);
  // t = 1, g = [0.5, -1]:
  //   p ← p·(1 − 0.1·0.1) = [0.99, -1.98]
  //   m = 0.1·g = [0.05, -0.1],  v = 0.001·g² = [0.00025, 0.001]
  //   m̂ = m / (1 − 0.9) = [0.5, -1],  v̂ = v / (1 − 0.999) = [0.25, 1],  √v̂ = [0.5, 1]
  //   p ← p − 0.1·m̂/(√v̂ + 1e-8) = [0.99 − 0.1, -1.98 + 0.1] = [0.89, -1.88]
  set_grad(p, {0.5, -1});
  opt.step();
  check_close(p, {0.89, -1.88});
  check_close(opt.state_dict().at("w.exp_avg"), {0.05, -0.1});
  check_close(opt.state_dict().at("w.exp_avg_sq"), {0.00025, 0.001}, 1e-10);
  CHECK(opt.step_count("w") == 1);
  // t = 2, g = [0.1, 0.4]:
  //   p ← p·0.99 = [0.8811, -1.8612]
  //   m = 0.9·[0.05, -0.1] + 0.1·[0.1, 0.4] = [0.055, -0.05]
  //   v = 0.999·[0.00025, 0.001] + 0.001·[0.01, 0.16] = [0.00025975, 0.001159]
  //   1 − β1² = 0.19, 1 − β2² = 0.001999
  //   m̂ = [0.289474, -0.263158],  v̂ = [0.129940, 0.579790],  √v̂ = [0.360472, 0.761439]
  //   p ← p − 0.1·m̂/√v̂ = [0.8811 − 0.080304, -1.8612 + 0.034561] = [0.800796, -1.826639]
  set_grad(p, {0.1, 0.4});
  opt.step();
  check_close(p, {0.8007959064, -1.8266394167});
  check_close(opt.state_dict().at("w.exp_avg"), {0.055, -0.05});
  check_close(opt.state_dict().at("w.exp_avg_sq"), {0.00025975, 0.001159}, 1e-10);
  CHECK(opt.step_count("w") == 2);
}

TEST_CASE("AdamW: eps is added after the bias correction of the square root") {
  // lr 0.1, eps 0.1 (large on purpose), wd 0, t = 1, g = 0.5, p = 1:
  //   √v̂ = √(0.001·0.25 / 0.001) = 0.5,  p ← 1 − 0.1·0.5/(0.5 + 0.1) = 0.916667
  // (eps inside, (√v + eps)/√(1 − β2), would give 1 − 0.1·0.5/3.6623 = 0.986347)
  Tensor p = param({1});
  AdamW opt({{"w", p}}, {.lr = 0.1, .eps = 0.1, .weight_decay = 0});
  set_grad(p, {0.5});
  opt.step();
  check_close(p, {1 - 0.1 * 0.5 / 0.6});
}

TEST_CASE("AdamW: biases and LayerNorm weights are not decayed") {
  // With g = 0 the Adam part is 0/(0 + eps) = 0, so a step only applies the decay:
  // decayed parameters are multiplied by 1 − lr·wd = 1 − 0.5·0.2 = 0.9, the others stay.
  nn::NamedTensors ps;
  for (const char* name : {"dense.weight", "dense.bias", "LayerNorm.weight", "LayerNorm.bias",
                           "classifier.weight"})
    ps.push_back({name, param({2, -4})});
  AdamW opt(ps, {.lr = 0.5, .weight_decay = 0.2});
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(*opt.param_groups()[0].weight_decay == 0.2);
  CHECK(*opt.param_groups()[1].weight_decay == 0.0);
  for (auto& [name, p] : ps) set_grad(p, {0, 0});
  opt.step();
  check_close(ps[0].second, {1.8, -3.6});  // dense.weight
  check_close(ps[1].second, {2, -4});      // dense.bias
  check_close(ps[2].second, {2, -4});      // LayerNorm.weight
  check_close(ps[3].second, {2, -4});      // LayerNorm.bias
  check_close(ps[4].second, {1.8, -3.6});  // classifier.weight

  // nullptr as the rule: everything decays
  Tensor b = param({2, -4});
  AdamW all({{"dense.bias", b}}, {.lr = 0.5, .weight_decay = 0.2}, nullptr);
  set_grad(b, {0, 0});
  all.step();
  check_close(b, {1.8, -3.6});
}

TEST_CASE("AdamW: fused kernel == tensor-op reference over several steps") {
  // f32 and f64; sizes that exercise the vector tail (7) and the thread pool (> kGrainElems);
  // two groups with different lr and decay; fresh random gradients each step.
  for (DType dt : {DType::f32, DType::f64}) {
    std::vector<Shape> shapes{{7}, {33, 5}, {100003}};
    nn::NamedTensors fused_ps, ref_ps;
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor p = test::random_param(shapes[i], 10 + i, dt);
      std::string name = i == 1 ? "layer.bias" : "layer" + std::to_string(i) + ".weight";
      fused_ps.push_back({name, p});
      ref_ps.push_back({name, test::clone_param(p)});
    }
    AdamWOptions o{.lr = 3e-2, .beta1 = 0.85, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.05};
    AdamW fused(fused_ps, o);
    o.fused = false;
    AdamW ref(ref_ps, o);
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        Generator g(100 + 10 * step + i);
        Tensor grad = Tensor::empty(shapes[i], dt);
        normal_(grad, 0.0, 1.0, g);
        fused_ps[i].second.set_grad(grad);
        ref_ps[i].second.set_grad(grad.clone());
      }
      fused.step();
      ref.step();
    }
    // the kernel contracts a·b + c into FMAs, the ops do not: equal to a few ulps
    const double tol = dt == DType::f32 ? 1e-6 : 1e-13;
    auto fs = fused.state_dict(), rs = ref.state_dict();
    for (size_t i = 0; i < shapes.size(); ++i) {
      INFO(fused_ps[i].first << " " << dt);
      check_close(fused_ps[i].second, ref_ps[i].second, tol, tol);
      for (const char* buf : {".exp_avg", ".exp_avg_sq"})
        check_close(fs.at(fused_ps[i].first + buf), rs.at(ref_ps[i].first + buf), tol, tol);
    }
  }
}

TEST_CASE("AdamW: frozen parameters and parameters without a gradient are untouched") {
  Tensor live = param({1, 2}), frozen = param({3, 4}), nograd = param({5, 6});
  frozen.set_requires_grad(false);
  AdamW opt({{"live", live}, {"frozen", frozen}, {"nograd", nograd}}, {.lr = 0.1});
  set_grad(live, {1, 1});
  set_grad(frozen, {1, 1});  // a stale gradient on a frozen parameter is ignored too
  opt.step();
  check_close(frozen, {3, 4});
  check_close(nograd, {5, 6});
  CHECK(live.to_vector<float>()[0] < 1.0f);
  CHECK(opt.step_count("frozen") == 0);
  CHECK(opt.step_count("nograd") == 0);
  CHECK(opt.state_dict().count("frozen.exp_avg") == 0);
  // the skipped parameter starts its own count later: its first step has t = 1, where
  // m̂/√v̂ = g/|g| = sign g, so after the decay it moves by lr (wd is the default 0.01)
  set_grad(nograd, {1, -1});
  opt.step();
  CHECK(opt.step_count("nograd") == 1);
  CHECK(opt.step_count("live") == 2);
  // p ← p·(1 − 0.1·0.01) − 0.1·sign(g) = [5·0.999 − 0.1, 6·0.999 + 0.1]
  check_close(nograd, {4.895, 6.094}, 1e-5);
}

TEST_CASE("AdamW: zero_grad sets gradients to none by default or fills zeros") {
  Tensor p = param({1, 2});
  AdamW opt({{"w", p}});
  set_grad(p, {1, 1});
  Tensor g = p.grad();
  opt.zero_grad(/*set_to_none=*/false);
  CHECK(p.grad().is_same(g));
  check_close(p.grad(), {0, 0});
  opt.zero_grad();
  CHECK(!p.grad().defined());
}

TEST_CASE("AdamW: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor p = test::random_param({1000, 37}, 1);
  Tensor pg = test::clone_param(p.detach().to(Device::cuda()));
  AdamW cpu({{"w", p}}, {.lr = 1e-2, .weight_decay = 0.1});
  AdamW gpu({{"w", pg}}, {.lr = 1e-2, .weight_decay = 0.1});
  for (int step = 0; step < 3; ++step) {
    Tensor grad = randn({1000, 37});
    p.set_grad(grad);
    pg.set_grad(grad.detach().to(Device::cuda()));
    cpu.step();
    gpu.step();
  }
  check_close(pg.detach().to(Device::cpu()), p, 1e-6, 1e-6);
  check_close(gpu.state_dict().at("w.exp_avg_sq").detach().to(Device::cpu()),
              cpu.state_dict().at("w.exp_avg_sq"), 1e-9, 1e-6);
}

TEST_CASE("AdamW: bad hyper-parameters and gradients are typed errors") {
  nn::NamedTensors ps{{"w", param({1, 2})}};
  CHECK(test::error_message([&] { AdamW(ps, {.lr = -1}); }) ==
        "[AdamW] expected lr >= 0, got -1");
  CHECK_THROWS_AS(AdamW(ps, {.beta1 = 1.0}), ConfigError);
  CHECK_THROWS_AS(AdamW(ps, {.beta1 = -0.1}), ConfigError);
  CHECK(test::error_message([&] { AdamW(ps, {.beta2 = 1.5}); }) ==
        "[AdamW] expected beta2 in [0, 1), got 1.5");
  CHECK_THROWS_AS(AdamW(ps, {.eps = -1e-8}), ConfigError);
  CHECK_THROWS_AS(AdamW(ps, {.weight_decay = -0.1}), ConfigError);
  CHECK_THROWS_AS(AdamW(nn::NamedTensors{}), ConfigError);  // empty parameter list
  CHECK_THROWS_AS(AdamW(ps, {.lr = std::nan("")}), ConfigError);

  AdamW opt(ps);
  CHECK_THROWS_AS(opt.set_lr(-0.5), ConfigError);
  ps[0].second.set_grad(Tensor::zeros({3}));
  CHECK(test::error_message([&] { opt.step(); }) ==
        "[AdamW] expected the gradient of 'w' to have shape (2), got (3)");
  ps[0].second.set_grad(Tensor::zeros({2}, DType::f64));
  CHECK_THROWS_AS(opt.step(), DTypeError);
  CHECK(opt.step_count("w") == 0);  // a failed step changed nothing
}
