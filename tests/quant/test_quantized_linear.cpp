// tests/quant/test_quantized_linear.cpp — the QuantizedLinear module: forward == the reference
// composition of quantize ops, bypass == Linear, shared tensors and keys, binary_residual's
// trainable μ/γ, pruning that holds for formats without a zero, and QAT for every format
// through the module with a real optimizer.
#include <doctest/doctest.h>

#include "autograd/ops.h"
#include "helpers.h"
#include "quant/quant_configs.h"
#include "quant/quantized_linear.h"
#include "train/adamw.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;
using test::check_close;

namespace {

std::shared_ptr<nn::Linear> make_linear(int64_t in, int64_t out, uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Linear>(in, out);
}

Tensor zero() { return Tensor::zeros({}); }

}  // namespace

TEST_CASE("QuantizedLinear forward equals the composition of quantize ops") {
  auto base = make_linear(40, 6, 3);  // in = 40: one full block of 32 and a partial one
  Tensor x = test::random_tensor({2, 5, 40}, 9, -2, 2, DType::f32);
  for (const char* name :
       {"integer", "minifloat_ieee", "log", "block_fp", "mxint8", "ternary", "mxfp4_e2m1"}) {
    INFO(name);
    json cfg = test::config_for(name);
    QuantizedLinear q(*base, cfg);
    Format f_in = parse_format(cfg, "data_in_"), f_w = parse_format(cfg, "weight_"),
           f_b = parse_format(cfg, "bias_");
    Tensor ref = linear(quantize(x, f_in), quantize(base->weight, f_w), quantize(base->bias, f_b));
    CHECK(q(x).to_vector<float>() == ref.to_vector<float>());  // the same ops: bit-identical
  }
  // data_out quantizes the result too
  json cfg = {{"name", "integer"}, {"data_in_width", 8},  {"weight_width", 8},
              {"bias_width", 8},   {"data_out_width", 6}, {"data_out_frac_width", 2}};
  QuantizedLinear q(*base, cfg);
  Format f8 = make_format("integer", {{"width", 8}}), f_out = parse_format(cfg, "data_out_");
  Tensor ref = quantize(
      linear(quantize(x, f8), quantize(base->weight, f8), quantize(base->bias, f8)), f_out);
  CHECK(q(x).to_vector<float>() == ref.to_vector<float>());
  // binary_residual: residual signs of x with μ, |γ|·sign(W), bias unquantized
  QuantizedLinear r(*base, test::config_for("binary_residual"));
  Tensor mu = Tensor::from({2.f / 3, 1.f / 3}, {2}), gamma = Tensor::ones({1});
  Tensor ref_r = linear(residual_sign(x, mu), binary_gamma(base->weight, gamma), base->bias);
  check_close(r(x), ref_r, 1e-6, 1e-6);
}

TEST_CASE("QuantizedLinear with bypass is the plain Linear") {
  auto base = make_linear(8, 3, 4);
  Tensor x = test::random_tensor({4, 8}, 5, -1, 1, DType::f32);
  QuantizedLinear q(*base, {{"bypass", true}});
  CHECK(q.type_name() == "QuantizedLinear");
  CHECK(!q.is_quantized());
  CHECK(q(x).to_vector<float>() == (*base)(x).to_vector<float>());
  QuantizedLinear named_null(*base, {{"name", nullptr}});
  CHECK(!named_null.is_quantized());
}

TEST_CASE("QuantizedLinear shares the Linear's tensors and keeps its keys") {
  auto base = make_linear(8, 3, 4);
  base->weight.set_requires_grad(false);  // frozen (as under LoRA): stays frozen
  Generator before = default_generator();
  QuantizedLinear q(*base, test::config_for("integer"));
  CHECK(default_generator().offset == before.offset);  // no random init was drawn
  CHECK(q.weight.is_same(base->weight));
  CHECK(q.bias.is_same(base->bias));
  CHECK(!q.weight.requires_grad());
  CHECK(q.bias.requires_grad());
  std::vector<std::string> keys;
  for (auto& [k, t] : q.state_dict()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"bias", "weight"});
  CHECK(dynamic_cast<nn::Linear*>(&q) != nullptr);  // passes looking for Linears find it
  CHECK(q.extra_repr() ==
        "in_features=8, out_features=3, bias=true, data_in=integer(width=8, frac_width=4), "
        "weight=integer(width=8, frac_width=4), bias=integer(width=8, frac_width=4)");
}

TEST_CASE("binary_residual mu and gamma are trainable parameters of the module") {
  auto base = make_linear(8, 3, 4);
  QuantizedLinear q(*base, test::config_for("binary_residual"));
  std::vector<std::string> names;
  for (auto& [n, t] : q.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"weight", "bias", "data_in_mu", "weight_gamma"});
  // they are the quantizers' own tensors: a gradient reaches them and loading writes into them
  Tensor x = test::random_tensor({4, 8}, 5, -1, 1, DType::f32);
  backward(sum(q(x)));
  Tensor mu_param = q.named_parameters()[2].second;
  CHECK(mu_param.is_same(q.quantizers().data_in.parameters()[0].second));
  CHECK(mu_param.grad().defined());
  q.load_state_dict({{"weight", q.weight},
                     {"bias", q.bias},
                     {"data_in_mu", Tensor::from({0.5f, 0.25f}, {2})},
                     {"weight_gamma", Tensor::from({2.f}, {1})}});
  Tensor ref = linear(residual_sign(x, Tensor::from({0.5f, 0.25f}, {2})),
                      binary_gamma(base->weight, Tensor::from({2.f}, {1})), base->bias);
  check_close(q(x), ref, 1e-6, 1e-6);
}

TEST_CASE("pruned weights and activations are zero for formats without a zero") {
  // binary maps 0 to +1: the wrapper masks again after quantizing, so pruned entries are 0
  auto base = make_linear(6, 2, 7);
  QuantizedLinear q(*base, test::config_for("binary"));
  Tensor keep = Tensor::from(std::vector<uint8_t>{1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0}, {2, 6});
  q.set_weight_mask(keep);
  q.set_activation_pruning(PruneSpec{0.5, PruneMethod::l1_norm, PruneScope::local});
  Tensor x = Tensor::from({0.1f, -2.f, 0.3f, 4.f, -0.05f, 1.f},
                          {1, 6});  // 3 smallest |x|: 0.1, 0.3, −0.05
  Tensor kx = Tensor::from(std::vector<uint8_t>{0, 1, 0, 1, 0, 1}, {1, 6});
  Format bin = make_format("binary");
  Tensor xq = where(kx, quantize(where(kx, x, zero()), bin), zero());
  Tensor wq = where(keep, quantize(where(keep, base->weight, zero()), bin), zero());
  Tensor ref = linear(xq, wq, quantize(base->bias, bin));
  CHECK(q(x).to_vector<float>() == ref.to_vector<float>());
  CHECK(q.type_name() == "QuantizedLinear");
  QuantizedLinear p(*base, {{"bypass", true}});
  p.set_weight_mask(keep);
  CHECK(p.type_name() == "PrunedLinear");
  CHECK(p.pruned_weights() == 5);
}

TEST_CASE("pruned weights are zero under MASE's log, which has no zero (0 -> 2^-bias)") {
  auto base = make_linear(6, 2, 7);
  const nlohmann::json cfg = {{"name", "log"},          {"data_in_width", 4},
                              {"weight_width", 4},      {"bias_width", 4},
                              {"compat", "mase"}};
  QuantizedLinear q(*base, cfg);
  Tensor keep = Tensor::from(std::vector<uint8_t>{1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0}, {2, 6});
  q.set_weight_mask(keep);
  Tensor x = Tensor::from({0.1f, -2.f, 0.3f, 4.f, -0.05f, 1.f}, {1, 6});
  const Format lg = parse_format(cfg, "weight_");
  CHECK(quantize(zero(), lg).item() == 0.125);  // the reason: 2^-3, not 0
  const Format lx = parse_format(cfg, "data_in_"), lb = parse_format(cfg, "bias_");
  Tensor wq = where(keep, quantize(where(keep, base->weight, zero()), lg), zero());
  Tensor ref = linear(quantize(x, lx), wq, quantize(base->bias, lb));
  CHECK(q(x).to_vector<float>() == ref.to_vector<float>());
}

TEST_CASE(
    "quantization-aware training through QuantizedLinear and AdamW lowers the loss for every "
    "format") {
  Tensor x = test::random_tensor({64, 16}, 11, -1, 1, DType::f32);
  Tensor w_true = test::random_tensor({4, 16}, 12, -0.5, 0.5, DType::f32);
  Tensor target = linear(x, w_true);
  for (const std::string& name : test::all_format_names()) {
    auto base = make_linear(16, 4, 2);
    auto q = std::make_shared<QuantizedLinear>(*base, test::config_for(name), 5);
    // plain binary outputs integers (±1 inputs and weights): its reachable target is the
    // binary layer of w_true's signs (as in test_linear.cpp)
    Tensor y_true = target;
    if (name == "binary") {
      QuantizedLinear teacher(nn::Linear(w_true, Tensor::ones({4})), test::config_for("binary"));
      y_true = teacher(x).detach();
    }
    train::AdamW opt(q->named_parameters(),
                     {.lr = name == "binary" ? 0.01 : 0.02, .weight_decay = 0.0});
    std::vector<double> losses;
    for (int step = 0; step < 60; ++step) {
      Tensor d = (*q)(x)-y_true;
      Tensor loss = mean(d * d);
      losses.push_back(loss.item());
      opt.zero_grad();
      backward(loss);
      opt.step();
    }
    double last = 0;
    for (int i = 55; i < 60; ++i) last += losses[i] / 5;
    INFO(name << ": loss " << losses[0] << " -> " << last);
    CHECK(last < 0.7 * losses[0]);
  }
}

TEST_CASE("QuantizedLinear describe and from_description round-trip") {
  auto base = make_linear(8, 3, 4);
  QuantizedLinear q(*base, test::config_for("minifloat_ieee"), 17);
  q.set_weight_mask(Tensor::ones({3, 8}, DType::u8));
  q.set_activation_pruning(PruneSpec{0.25, PruneMethod::random, PruneScope::global, 3}, 40);
  json d = q.describe();
  auto r = QuantizedLinear::from_description(*base, d, "fc");
  CHECK(r->describe() == d);
  CHECK(r->quant_seed() == 17);
  CHECK(r->activation_generator().offset == 40);
  CHECK_THROWS_AS(QuantizedLinear::from_description(*base, {{"seed", 1}}, "fc"), ConfigError);
  CHECK_THROWS_AS(QuantizedLinear::from_description(
                      *base, {{"quant", {{"name", "integer"}}}, {"seed", -1}}, "fc"),
                  ConfigError);
  CHECK_THROWS_AS(q.set_weight_mask(Tensor::ones({3, 7}, DType::u8)), ShapeError);
  CHECK_THROWS_AS(q.set_weight_mask(Tensor::ones({3, 8})), DTypeError);
  // a bad config leaves the layer as it was
  CHECK_THROWS_AS(q.set_quant_config({{"name", "integer"}, {"weight_width", 40}}), ConfigError);
  CHECK(q.quant_config() == test::config_for("minifloat_ieee"));
}
