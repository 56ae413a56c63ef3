// graph/passes/lora.cpp — insert_lora and fuse_lora (see lora.h).
#include "graph/passes/lora.h"

#include <regex>

#include "graph/passes/parameters.h"

namespace mase::graph {
namespace {

std::regex compile(const std::string& pattern, const char* what) {
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw ConfigError(cat("[insert_lora] expected a regular expression for ", what, ", got '",
                          pattern, "': ", e.what()));
  }
}

}  // namespace

InsertLoraReport insert_lora(nn::Module& model, const LoraConfig& config) {
  const std::regex targets = compile(config.targets, "targets");
  const std::regex trainable = compile(config.trainable, "trainable");
  InsertLoraReport r;
  // collect first: replacing while walking the tree would change what named_modules walks
  std::vector<std::pair<std::string, std::shared_ptr<nn::Linear>>> chosen;
  for (const auto& [path, m] : model.named_modules())
    if (auto lin = std::dynamic_pointer_cast<nn::Linear>(m); lin && std::regex_search(path, targets))
      chosen.push_back({path, lin});
  MASE_CHECK(!chosen.empty(), ConfigError, "[insert_lora] targets '", config.targets,
             "' match no Linear module (paths look like bert.encoder.layer.0.attention.self.query)");
  for (const auto& [path, lin] : chosen) {
    auto lora = std::make_shared<nn::LoraLinear>(*lin, config.rank, config.alpha, config.dropout);
    model.replace_submodule(path, lora);
    r.replaced.push_back(path);
    r.lora_parameters += lora->lora_A.numel() + lora->lora_B.numel();
  }
  // what trains: the adapters and the `trainable` parameters, nothing else
  for (auto& [path, p] : model.named_parameters()) {
    const auto dot = path.rfind('.');
    const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
    p.set_requires_grad(leaf == "lora_A" || leaf == "lora_B" || std::regex_search(path, trainable));
  }
  ParameterReport counts = report_trainable_parameters(model);
  r.trainable = counts.trainable;
  r.total = counts.total;
  return r;
}

FuseLoraReport fuse_lora(nn::Module& model) {
  FuseLoraReport r;
  std::vector<std::pair<std::string, std::shared_ptr<nn::LoraLinear>>> chosen;
  for (const auto& [path, m] : model.named_modules())
    if (auto lora = std::dynamic_pointer_cast<nn::LoraLinear>(m)) chosen.push_back({path, lora});
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

}  // namespace mase::graph
