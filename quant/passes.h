// quant/passes.h — the Lab 1 transform passes on a module tree: quantize, prune, bake masks,
// and the compression pipeline (quantize then prune from one config).
//
// A pass changes the model in place (it swaps Linear children for QuantizedLinear through
// Module::replace_submodule; the weights are the same tensors) and returns a report. The
// report is [[nodiscard]]: MASE users often forgot that a pass returns something, here the
// compiler says so. Configs are taken by const reference and never modified (MASE popped
// "by" from the caller's dict, so a second call with the same config failed).
//
// quantize: {"by": "type" | "name" | "regex", "default": {"config": {...}},
//            "<key>": {"config": {"name": <format>, <MASE keys>...}}, "seed": 0}
//   by type   keys are op types; "linear" matches every Linear (wrappers included).
//   by name   keys are module paths, dotted ("bert.encoder.layer.0.attention.self.query") or as
//             graph node names ("bert_encoder_layer_0_attention_self_query").
//   by regex  keys are ECMAScript regexes searched (std::regex_search) in the dotted path and
//             in the node name; anchor with ^…$ for a whole match. A layer matched by two
//             regexes is a ConfigError (which one wins would otherwise depend on key order).
//   "default" applies to every Linear no key matched. A config whose "name" is null (or that
//   is empty, or has "bypass": true) leaves the layer unquantized; format keys without a
//   "name" are a ConfigError (a misspelled "name" must not leave the layer fp32). A key that
//   matches no layer is a ConfigError, before any layer changes, naming the nearest layer and
//   listing them all.
//   Stochastic quantizers of layer i (model order) are seeded with seed + 4·i.
// prune: {"weight": {sparsity, method, scope, seed}, "activation": {...}} (prune.h), both
//   optional; every Linear is pruned (plain ones become PrunedLinear). Weight masks are
//   computed from the current weights, once; the report gives the sparsity each layer got.
// compress: {"quantize": {...}, "prune": {...}}, either optional, applied in that order;
//   read_config_file reads it from TOML or JSON.
// Read next: quant/checkpoint.h (saving compressed models), docs/lab1.md (using all this).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/layers.h"

namespace mase::quant {

// Every Linear below the root (wrappers included), by dotted path, in model order.
std::vector<std::pair<std::string, nn::Linear*>> linear_layers(nn::Module& model);

struct QuantizeRow {
  std::string layer, old_type, new_type;
  std::string data_in, weight, bias, data_out;  // formats ("none" when not quantized)
};

struct QuantizeReport {
  std::vector<QuantizeRow> layers;    // every Linear the pass looked at, in model order
  std::vector<std::string> warnings;  // printed after the table (the pass adds none now)
  int64_t quantized() const;          // layers whose new type quantizes
  std::string str() const;            // a table, then the warnings
  nlohmann::json to_json() const;
};

[[nodiscard]] QuantizeReport quantize(nn::Module& model, const nlohmann::json& config);

struct PruneRow {
  std::string layer, type;
  int64_t weights = 0, pruned = 0;  // weight elements, of which masked
  std::string activation;           // activation pruning spec, or "none"
  double sparsity() const { return weights ? double(pruned) / double(weights) : 0.0; }
};

struct PruneReport {
  std::vector<PruneRow> layers;
  nlohmann::json weight, activation;  // the specs used (null when not given)
  int64_t weights() const;
  int64_t pruned() const;
  std::string str() const;
  nlohmann::json to_json() const;
};

[[nodiscard]] PruneReport prune(nn::Module& model, const nlohmann::json& config);

// The sparsity each Linear has now (from its weight mask; 0 for a plain Linear) — e.g. after
// loading a pruned checkpoint, or for final.json.
[[nodiscard]] PruneReport sparsity_report(nn::Module& model);

// Make weight masks permanent: W ← W ⊙ M and the mask is dropped; a layer left with nothing
// to do (no quantizer, no activation pruning) becomes a plain Linear over the same tensors.
// Returns how many layers were baked.
int64_t bake_masks(nn::Module& model);

struct CompressReport {
  bool quantized = false, pruned = false;  // which passes ran
  QuantizeReport quantize;
  PruneReport prune;
  std::string str() const;
  nlohmann::json to_json() const;
};

[[nodiscard]] CompressReport compress(nn::Module& model, const nlohmann::json& config);
// What compress checks of `config` before it touches a model: an object whose sections are
// quantize and prune (ConfigError naming the first other one). For a search to refuse a
// misspelled section before it creates a study.
void check_compress_sections(const nlohmann::json& config);

// What the model's Linear layers are now, for a run's final.json: one entry per layer that is
// quantized, pruned or packed ({"layer", "type", "data_in", "weight", "bias", "data_out",
// "weight_sparsity", "activation"}; an MxInt8Linear has only "layer", "type", "weight" and
// "weight_sparsity"), the weight sparsity over every Linear's weight ("linear_weight_sparsity"),
// and the MXINT8 bytes (model_bytes) when any layer is an MxInt8Linear. null when every Linear
// is a plain one. A masked layer's sparsity is its mask's; a packed layer (MxInt8Linear,
// Int8Linear) has no mask left, so its zeros are counted on its codes (mxint8_zeros,
// Int8Weight::zeros): the pruned weights and any that rounded to zero.
[[nodiscard]] nlohmann::json compression_summary(nn::Module& model);

// A config file as JSON: *.toml (toml++; tables and arrays map to objects and arrays) or
// anything else as JSON. IoError for a missing file or a syntax error (with line/column).
nlohmann::json read_config_file(const std::string& path);

}  // namespace mase::quant
