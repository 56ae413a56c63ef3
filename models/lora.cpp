// models/lora.cpp — LoraLinear (see lora.h for the math).
#include "models/lora.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <regex>

#include "models/init.h"
#include "models/parameters.h"

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
    : in_features(base.in_features),
      out_features(base.out_features),
      rank(r),
      alpha(a),
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
  return cat("in_features=", in_features, ", out_features=", out_features,
             ", bias=", bias.defined() ? "true" : "false", ", rank=", rank, ", alpha=", alpha,
             ", dropout=", dropout);
}

nlohmann::json LoraLinear::to_json() const {
  return {{"in_features", in_features},
          {"out_features", out_features},
          {"bias", bias.defined()},
          {"rank", rank},
          {"alpha", alpha},
          {"dropout", dropout}};
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

// ---- the transforms ------------------------------------------------------------------------

InsertLoraReport insert_lora(Module& model, const LoraConfig& config) {
  const std::regex targets = path_regex(config.targets, "insert_lora");
  path_regex(config.trainable, "insert_lora");  // a bad regex fails before anything changes
  InsertLoraReport r;
  // collect first: replacing while walking the tree would change what named_modules walks
  // Only plain Linears: a QuantizedLinear is a Linear too, and wrapping its weight would drop
  // its quantizers without a word (QAT + LoRA would train unquantized).
  std::vector<std::pair<std::string, std::shared_ptr<Linear>>> chosen;
  std::string quantized;  // the first matching Linear that is not a plain one
  for (const auto& [path, m] : model.named_modules())
    if (auto lin = std::dynamic_pointer_cast<Linear>(m); lin && std::regex_search(path, targets)) {
      if (m->type_name() == "Linear")
        chosen.push_back({path, lin});
      else if (quantized.empty())
        quantized = cat(path, " is a ", m->type_name());
    }
  MASE_CHECK(quantized.empty(), ConfigError, "[insert_lora] targets '", config.targets,
             "' match a layer that is not a plain Linear: ", quantized,
             " (LoRA adds a low-rank update to fp32 weights: quantize after fusing the adapters, "
             "or leave these layers out of --lora-targets)");
  if (chosen.empty()) {
    // the paths may match modules that are not plain Linears: quantized or MXINT8 layers,
    // whose weights an adapter cannot be added to
    std::string other;
    for (const auto& [path, m] : model.named_modules())
      if (!path.empty() && std::regex_search(path, targets) && m->type_name() != "Linear" &&
          other.empty() && m->type_name().find("Linear") != std::string::npos)
        other = cat(path, " is a ", m->type_name());
    MASE_CHECK(other.empty(), ConfigError, "[insert_lora] targets '", config.targets,
               "' match no plain Linear: ", other, " (LoRA adds a low-rank update to fp32 weights, "
               "which quantized and MXINT8 layers do not keep: use one or the other)");
    throw ConfigError(cat("[insert_lora] targets '", config.targets, "' match no Linear module "
                          "(paths look like bert.encoder.layer.0.attention.self.query)"));
  }
  // a rank above min(in, out) adds parameters and no expressive power (B·A has at most that
  // rank), and a huge one would crawl: refused before anything changes
  int64_t max_rank = INT64_MAX;
  std::string smallest;
  for (const auto& [path, lin] : chosen)
    if (std::min(lin->in_features, lin->out_features) < max_rank) {
      max_rank = std::min(lin->in_features, lin->out_features);
      smallest = path;
    }
  MASE_CHECK(config.rank >= 1 && config.rank <= max_rank, ConfigError,
             "[insert_lora] expected a rank in 1..", max_rank, " (min(in, out) of ", smallest,
             "), got ", config.rank);
  for (const auto& [path, lin] : chosen) {
    auto lora = std::make_shared<LoraLinear>(*lin, config.rank, config.alpha, config.dropout);
    model.replace_submodule(path, lora);
    r.replaced.push_back(path);
    r.lora_parameters += lora->lora_A.numel() + lora->lora_B.numel();
  }
  set_lora_trainable(model, config.trainable);
  ParameterReport counts = report_trainable_parameters(model);
  r.trainable = counts.trainable;
  r.total = counts.total;
  return r;
}

void set_lora_trainable(Module& model, const std::string& trainable_paths) {
  const std::regex trainable = path_regex(trainable_paths, "insert_lora");
  // what trains: the adapters and the `trainable` parameters, nothing else
  for (auto& [path, p] : model.named_parameters()) {
    const auto dot = path.rfind('.');
    const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
    p.set_requires_grad(leaf == "lora_A" || leaf == "lora_B" || std::regex_search(path, trainable));
  }
}

FuseLoraReport fuse_lora(Module& model) {
  FuseLoraReport r;
  std::vector<std::pair<std::string, std::shared_ptr<LoraLinear>>> chosen;
  for (const auto& [path, m] : model.named_modules())
    if (auto lora = std::dynamic_pointer_cast<LoraLinear>(m)) chosen.push_back({path, lora});
  for (const auto& [path, lora] : chosen) {
    model.replace_submodule(path, lora->fused());
    r.fused.push_back(path);
  }
  return r;
}

std::string InsertLoraReport::str() const {
  return cat("insert_lora: ", replaced.size(), " Linear modules -> LoraLinear (",
             with_commas(lora_parameters), " adapter parameters); trainable ",
             with_commas(trainable), " of ", with_commas(total), "\n");
}

std::string FuseLoraReport::str() const {
  return cat("fuse_lora: ", fused.size(), " LoraLinear modules -> Linear (W + alpha/r * B A)\n");
}

}  // namespace mase::nn
