// models/lora.cpp — LoraLinear (see lora.h for the math).
#include "models/lora.h"

#include <cmath>

#include "models/init.h"

namespace mase::nn {
namespace {

void check_lora_args(int64_t rank, double alpha, double dropout) {
  MASE_CHECK(rank >= 1, ConfigError, "[LoraLinear] expected rank >= 1, got ", rank);
  MASE_CHECK(alpha > 0, ConfigError, "[LoraLinear] expected alpha > 0, got ", alpha,
             " (the update is scaled by alpha / rank)");
  MASE_CHECK(dropout >= 0.0 && dropout < 1.0, ConfigError,
             "[LoraLinear] expected dropout in [0, 1), got ", dropout);
}

}  // namespace

LoraLinear::LoraLinear(const Linear& base, int64_t r, double a, double p)
    : in_features(base.in_features), out_features(base.out_features), rank(r), alpha(a),
      dropout(p) {
  check_lora_args(r, a, p);
  register_parameter("weight", weight, base.weight, /*requires_grad=*/false);
  if (base.bias.defined()) register_parameter("bias", bias, base.bias, false);
  init_lora();
}

LoraLinear::LoraLinear(int64_t in, int64_t out, bool with_bias, int64_t r, double a, double p)
    : in_features(in), out_features(out), rank(r), alpha(a), dropout(p) {
  check_lora_args(r, a, p);
  MASE_CHECK(in > 0 && out > 0, ConfigError, "[LoraLinear] expected positive sizes, got in=", in,
             ", out=", out);
  register_parameter("weight", weight, Tensor::zeros({out, in}), false);
  if (with_bias) register_parameter("bias", bias, Tensor::zeros({out}), false);
  init_lora();
}

void LoraLinear::init_lora() {
  const DType dt = weight.dtype();
  const Device dev = weight.device();
  Tensor a = Tensor::empty({rank, in_features}, dt, Device::cpu());
  kaiming_uniform_(a, std::sqrt(5.0));  // U(±1/√in), as PEFT's reset_lora_parameters
  register_parameter("lora_A", lora_A, a.to(dev));
  register_parameter("lora_B", lora_B, Tensor::zeros({out_features, rank}, dt, dev));  // B·A = 0
}

std::string LoraLinear::extra_repr() const {
  return cat("in_features=", in_features, ", out_features=", out_features, ", bias=",
             bias.defined() ? "true" : "false", ", rank=", rank, ", alpha=", alpha,
             ", dropout=", dropout);
}

nlohmann::json LoraLinear::to_json() const {
  return {{"in_features", in_features}, {"out_features", out_features},
          {"bias", bias.defined()},     {"rank", rank},
          {"alpha", alpha},             {"dropout", dropout}};
}

Tensor LoraLinear::forward(const Tensor& x) {
  // x is (..., in); the low-rank path: (..., in) -> (..., r) -> (..., out)
  Tensor y = linear(x, weight, bias);
  Tensor h = linear(linear(mase::dropout(x, dropout, is_training()), lora_A), lora_B);
  return y + h * scaling();
}

std::shared_ptr<Linear> LoraLinear::fused() const {
  NoGradGuard no_grad;
  Tensor w = add(weight, mul(matmul(lora_B, lora_A), scaling()));  // W + (alpha/r)·B·A
  w.set_requires_grad(weight.requires_grad());
  return std::make_shared<Linear>(w, bias);
}

}  // namespace mase::nn
