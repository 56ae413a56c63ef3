// tests/quant/quant_configs.h — one MASE-style Linear config per format, shared by the
// quantized-Linear tests (test_linear.cpp: the math; test_quantized_linear.cpp: the module).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "quant/format.h"

namespace mase::test {

// Every format name a Linear config accepts (quant::all_kinds()).
inline std::vector<std::string> all_format_names() {
  std::vector<std::string> names;
  for (quant::Kind k : quant::all_kinds()) names.emplace_back(quant::kind_name(k));
  return names;
}

// One config per format, MASE keys, the same parameters for data_in, weight and bias.
inline nlohmann::json config_for(const std::string& name) {
  nlohmann::json p = nlohmann::json::object();
  if (name == "integer")
    p = {{"width", 8}, {"frac_width", 4}};
  else if (name == "minifloat_ieee" || name == "minifloat_denorm")
    p = {{"width", 8}, {"exponent_width", 4}};
  else if (name == "log")
    p = {{"width", 8}};
  else if (name == "ternary")
    p = {{"scaling", true}};
  else if (name == "block_fp")
    p = {{"width", 6}, {"exponent_width", 8}, {"block_size", 8}};
  else if (name == "block_minifloat")
    p = {{"width", 6}, {"exponent_width", 3}, {"exponent_bias_width", 8}, {"block_size", 8}};
  else if (name == "block_log")
    p = {{"width", 6}, {"exponent_bias_width", 8}, {"block_size", 8}};
  nlohmann::json cfg = {{"name", name}};
  for (const char* t : {"data_in_", "weight_", "bias_"})
    for (auto& [k, v] : p.items()) cfg[std::string(t) + k] = v;
  return cfg;
}

}  // namespace mase::test
