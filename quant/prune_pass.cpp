// quant/prune_pass.cpp — the prune pass, the sparsity report and mask baking (see passes.h;
// masks and specs: prune.h; how a pruned layer computes: quantized_linear.h).
#include <cstdio>

#include "quant/integer_linear.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "quant/report_table.h"

namespace mase::quant {
namespace {

using nlohmann::json;

PruneRow row_of(const std::string& path, nn::Linear& lin) {
  PruneRow r{path, lin.type_name(), lin.weight.numel(), 0, "none"};
  if (auto* q = dynamic_cast<QuantizedLinear*>(&lin)) {
    r.pruned = q->pruned_weights();
    if (q->activation_pruning()) r.activation = q->activation_pruning()->str();
  }
  return r;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * v);
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, nn::Linear*>> linear_layers(nn::Module& model) {
  std::vector<std::pair<std::string, nn::Linear*>> out;
  for (auto& [path, m] : model.named_modules())
    if (auto* lin = dynamic_cast<nn::Linear*>(m.get()); lin && !path.empty())
      out.push_back({path, lin});
  return out;
}

PruneReport prune(nn::Module& model, const json& config) {
  MASE_CHECK(config.is_object(), ConfigError, "[prune] expected a config object, got ",
             config.dump());
  for (const auto& [key, v] : config.items())
    MASE_CHECK(key == "weight" || key == "activation", ConfigError, "[prune] unknown key '", key,
               "' (keys are weight and activation)");
  std::optional<PruneSpec> wspec, aspec;
  if (config.contains("weight")) wspec = parse_prune_spec(config["weight"], "weight");
  if (config.contains("activation")) aspec = parse_prune_spec(config["activation"], "activation");

  auto layers = linear_layers(model);
  std::vector<Tensor> masks;
  if (wspec) {
    std::vector<Tensor> weights;
    for (auto& [path, lin] : layers) weights.push_back(lin->weight.detach());
    masks = weight_keep_masks(weights, *wspec);
  }
  PruneReport report;
  if (wspec) report.weight = wspec->to_json();
  if (aspec) report.activation = aspec->to_json();
  for (size_t i = 0; i < layers.size(); ++i) {
    auto& [path, lin] = layers[i];
    auto* q = dynamic_cast<QuantizedLinear*>(lin);
    if ((wspec || aspec) && !q) {
      auto made = std::make_shared<QuantizedLinear>(*lin, json{{"bypass", true}}, 0, path);
      model.replace_submodule(path, made);
      q = made.get();
      lin = made.get();
    }
    if (wspec) q->set_weight_mask(masks[i]);
    if (aspec) {
      PruneSpec s = *aspec;
      s.seed = aspec->seed + i;  // each layer its own random stream
      q->set_activation_pruning(s);
    }
    report.layers.push_back(row_of(path, *lin));
  }
  return report;
}

PruneReport sparsity_report(nn::Module& model) {
  PruneReport report;
  for (auto& [path, lin] : linear_layers(model)) report.layers.push_back(row_of(path, *lin));
  return report;
}

int64_t bake_masks(nn::Module& model) {
  int64_t baked = 0;
  for (auto& [path, lin] : linear_layers(model)) {
    auto* q = dynamic_cast<QuantizedLinear*>(lin);
    if (!q || !q->weight_mask().defined()) continue;
    q->apply_weight_mask_();
    q->clear_weight_mask();
    ++baked;
    if (!q->is_quantized() && !q->activation_pruning())
      model.replace_submodule(path, std::make_shared<nn::Linear>(q->weight, q->bias));
  }
  return baked;
}

json compression_summary(nn::Module& model) {
  json layers = json::array();
  int64_t weights = 0, pruned = 0;  // over every Linear's weight, packed ones included
  bool packed = false;
  auto sparsity = [](int64_t zeros, int64_t n) { return n ? double(zeros) / double(n) : 0.0; };
  for (auto& [path, m] : model.named_modules()) {
    // a packed weight has no mask left (packing bakes it): its zeros are counted on the codes,
    // one layer at a time and without dequantizing — pruned weights, and any that rounded to 0
    if (auto* mx = dynamic_cast<MxInt8Linear*>(m.get())) {
      const int64_t n = mx->weight_elements.numel(), zeros = mxint8_zeros(mx->packed());
      weights += n;
      pruned += zeros;
      layers.push_back({{"layer", path}, {"type", mx->type_name()}, {"weight", "mxint8 (packed)"},
                        {"weight_sparsity", sparsity(zeros, n)}});
      packed = true;
      continue;
    }
    if (auto* il = dynamic_cast<Int8Linear*>(m.get())) {
      const LinearQuantConfig& c = il->config();
      const int64_t n = il->weight().out_features() * il->weight().in_features();
      const int64_t zeros = il->weight().zeros();
      weights += n;
      pruned += zeros;
      layers.push_back({{"layer", path},
                        {"type", il->type_name()},
                        {"data_in", c.data_in.str()},
                        {"weight", c.weight.str()},
                        {"bias", c.bias.str()},
                        {"data_out", c.data_out ? c.data_out->str() : "none"},
                        {"weight_sparsity", sparsity(zeros, n)},
                        {"activation", "none"}});
      continue;
    }
    auto* q = dynamic_cast<QuantizedLinear*>(m.get());
    auto* lin = dynamic_cast<nn::Linear*>(m.get());
    if (lin && !path.empty()) weights += lin->weight.numel();
    if (!q) continue;
    LinearQuantizers& qs = q->quantizers();
    const PruneRow row = row_of(path, *q);
    pruned += row.pruned;
    layers.push_back({{"layer", path},
                      {"type", q->type_name()},
                      {"data_in", qs.data_in.str()},
                      {"weight", qs.weight.str()},
                      {"bias", qs.bias.str()},
                      {"data_out", qs.data_out.str()},
                      {"weight_sparsity", row.sparsity()},
                      {"activation", row.activation}});
  }
  if (layers.empty()) return nullptr;
  json j = {{"layers", layers}, {"linear_weight_sparsity", sparsity(pruned, weights)}};
  if (packed) {
    ModelBytes b = model_bytes(model);
    j["mxint8"] = {
        {"packed_elements", b.packed.elements}, {"packed_bytes", b.packed.packed_bytes()},
        {"fp32_bytes", b.packed.fp32_bytes()},  {"model_fp32_bytes", b.model_fp32_bytes},
        {"model_bytes", b.model_bytes},         {"model_saving", b.saving()}};
  }
  return j;
}

int64_t PruneReport::weights() const {
  int64_t n = 0;
  for (const PruneRow& r : layers) n += r.weights;
  return n;
}

int64_t PruneReport::pruned() const {
  int64_t n = 0;
  for (const PruneRow& r : layers) n += r.pruned;
  return n;
}

std::string PruneReport::str() const {
  ReportTable t({"layer", "type", "weights", "pruned", "sparsity", "activation"});
  for (const PruneRow& r : layers)
    t.add_row({r.layer, r.type, std::to_string(r.weights), std::to_string(r.pruned),
               percent(r.sparsity()), r.activation});
  std::string s = "prune:";
  if (!weight.is_null()) s += cat(" weight ", weight.dump());
  if (!activation.is_null()) s += cat(" activation ", activation.dump());
  s += cat("\n", t.str(), "  total: ", pruned(), " of ", weights(), " Linear weights pruned (",
           percent(weights() ? double(pruned()) / double(weights()) : 0.0), ")\n");
  return s;
}

json PruneReport::to_json() const {
  json rows = json::array();
  for (const PruneRow& r : layers)
    rows.push_back({{"layer", r.layer},
                    {"type", r.type},
                    {"weights", r.weights},
                    {"pruned", r.pruned},
                    {"sparsity", r.sparsity()},
                    {"activation", r.activation}});
  return {{"layers", rows},
          {"weight", weight},
          {"activation", activation},
          {"weights", weights()},
          {"pruned", pruned()}};
}

}  // namespace mase::quant
