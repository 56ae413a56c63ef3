// models/module_registry.h — rebuild a leaf module from its type name and config JSON.
//
// An exported graph (graph/export.h) stores each call_module node's module as
//   {"type": "Linear", "config": {"in_features": 128, "out_features": 2, "bias": true}}
// (type_name() and to_json() of the module) and its tensors in model.safetensors. Reloading
// calls make_module(type, config) and then loads the tensors, so every leaf module type that
// can appear in a graph needs a factory here. The built-in leaves (Linear, Embedding,
// LayerNorm, Dropout, GELU, Tanh, ReLU, Identity, LoraLinear) are registered already.
//
// Adding a type (e.g. quant/'s QuantizedLinear, a pruned wrapper):
//   1. override type_name() and to_json() (the constructor arguments; enough to rebuild the
//      module before its tensors are loaded — its tensors, masks included, come from
//      named_parameters / named_buffers and travel in model.safetensors);
//   2. register a factory once, before reloading:
//        nn::register_module_type("QuantizedLinear", [](const nlohmann::json& c) {
//          return std::make_shared<QuantizedLinear>(...c...); });
//      A layer above models/ does this in one function (e.g. quant::register_module_types())
//      that graph/export.cpp calls in register_all_module_types() — one line to add there.
//   3. override precision() if its parameters are not plain floats (graph metadata).
// A factory runs with the default random generator saved and restored, so rebuilding modules
// (whose constructors draw initial weights) does not move a seeded run's stream.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "models/module.h"

namespace mase::nn {

using ModuleFactory = std::function<ModulePtr(const nlohmann::json& config)>;

// Registers (or replaces) the factory of `type_name`. Thread-safe.
void register_module_type(const std::string& type_name, ModuleFactory make);
// Builds one. ConfigError for an unknown type (listing the known ones) or a bad config.
ModulePtr make_module(const std::string& type_name, const nlohmann::json& config);
bool is_registered_module_type(const std::string& type_name);
std::vector<std::string> registered_module_types();  // sorted

}  // namespace mase::nn
