// tests/quant/test_linear.cpp — the quantized Linear's math (QuantizedLinear's forward) and a
// tiny quantization-aware training run per format: gradients flow through every quantizer.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "helpers.h"
#include "quant/quant_configs.h"
#include "quant/quantize.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

using mase::test::config_for;

TEST_CASE("quantized_linear: y = Q_in(x)·Q_w(W)ᵀ + Q_b(b) and bypass") {
  json cfg = {{"name", "integer"}, {"data_in_width", 4}, {"data_in_frac_width", 1},
              {"weight_width", 4}, {"weight_frac_width", 2}, {"bias_width", 4}, {"bias_frac_width", 0}};
  LinearQuantizers q = make_linear_quantizers(parse_linear_config(cfg, "fc"));
  Tensor x = Tensor::from({0.7f, -1.3f}, {1, 2});     // Q_in (step 1/2): 0.5, −1.5 (−2.6 -> −3: tie? no, RNE(−2.6) = −3)
  Tensor w = Tensor::from({0.3f, 0.9f}, {1, 2});      // Q_w (step 1/4): 0.25, 1.0 (3.6 -> 4)
  Tensor b = Tensor::from({2.4f}, {1});               // Q_b (step 1): 2
  // 0.5·0.25 + (−1.5)·1.0 + 2 = 0.625
  test::check_close(quantized_linear(q, x, w, b), {0.625});
  LinearQuantizers none = make_linear_quantizers(parse_linear_config({{"bypass", true}}, "fc"));
  test::check_close(quantized_linear(none, x, w, b), {0.7 * 0.3 - 1.3 * 0.9 + 2.4}, 1e-6);
  // data_out: the output quantized too (step 1/2: 0.625 -> 0.5, a tie going to even 2·0.25)
  cfg["data_out_width"] = 4;
  cfg["data_out_frac_width"] = 1;
  LinearQuantizers qo = make_linear_quantizers(parse_linear_config(cfg, "fc"));
  test::check_close(quantized_linear(qo, x, w, b), {0.5});
  CHECK(make_linear_quantizers(parse_linear_config(config_for("binary_residual"), "fc")).parameters().size() == 2);
}

TEST_CASE("quantization-aware training lowers the loss for every format") {
  Generator g(11);
  Tensor x = Tensor::empty({64, 16}), w_true = Tensor::empty({4, 16});
  uniform_(x, -1, 1, g);
  uniform_(w_true, -0.5, 0.5, g);
  Tensor target = linear(x, w_true);
  // plain binary has no scale anywhere (±1 inputs, weights and bias): its outputs are integers,
  // so its target is one it can reach, the binary layer with w_true's signs
  Format bin = make_format("binary");
  Tensor target_bin = linear(quantize(x, bin), quantize(w_true, bin), Tensor::ones({4}));
  for (const std::string& name : test::all_format_names()) {
    LinearQuantizers q = make_linear_quantizers(parse_linear_config(config_for(name), "fc"), 5);
    Tensor w = Tensor::empty({4, 16}), b = Tensor::zeros({4});
    Generator gw(2);
    uniform_(w, -0.5, 0.5, gw);
    Tensors params = {w.set_requires_grad(true), b.set_requires_grad(true)};
    for (auto& [n, t] : q.parameters()) params.push_back(t);
    const bool plain_binary = name == "binary";
    const float lr = plain_binary ? 0.01f : 0.1f;
    std::vector<double> losses;
    for (int step = 0; step < 60; ++step) {
      Tensor d = quantized_linear(q, x, w, b) - (plain_binary ? target_bin : target);
      Tensor loss = mean(d * d);
      losses.push_back(loss.item());
      for (const Tensor& p : params) p.set_grad(Tensor());
      backward(loss);
      NoGradGuard no_grad;
      for (const Tensor& p : params) {  // SGD
        REQUIRE(p.grad().defined());
        float* v = p.data<float>();
        std::vector<float> gr = p.grad().to_vector<float>();
        for (size_t i = 0; i < gr.size(); ++i) v[i] -= lr * gr[i];
      }
    }
    double last = 0;
    for (int i = 55; i < 60; ++i) last += losses[i] / 5;
    INFO(name << ": loss " << losses[0] << " -> " << last);
    CHECK(last < 0.7 * losses[0]);
  }
}
