// search/lab_spaces.h — the search spaces of Labs 2.1 and 3, and what a trial of each does to a
// model.
//
// Lab 2.1, the tutorial's whole space: Lab 2's four architecture choices (lab2_space) plus the
// Linear-or-Identity choice for every *square* Linear (in_features == out_features: query,
// key, value, attention.output.dense, the pooler, and the FFN's two when I == H):
//   shared     one parameter `linear_layer` in {linear, identity} for all of them
//   per-layer  one parameter `<path>_type` per square-able Linear of the deepest model of the
//              space (the tutorial's `f"{name}_type"`); layers the trial's model does not have
//              are not read.
// apply_linear_choice replaces the chosen Linears by nn::Identity (y = x) in place.
//
// Lab 3, per-layer precision: every Linear picks `full` (fp32) or one of the study's formats,
// and each format's parameters, per layer (the course's LinearInteger search, generalized):
//   <path>:format            {full, integer, ...}
//   <path>:integer.width     {8, 16, 32}          (--widths)
//   <path>:integer.frac_width {2, 4, 8}           (--frac-widths)
//   <path>:minifloat_ieee.width ... (see default_choices in lab_spaces.cpp for every format)
// The chosen setting quantizes data_in, weight and bias alike (as MASE's LinearInteger); a
// trial's values become one quantize config by name (quant/passes.h).
// Read next: search/lab_objectives.h.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/module.h"
#include "search/space.h"

namespace mase::search {

// ---- Lab 2.1 ----------------------------------------------------------------------------
enum class LinearChoice { none, shared, per_layer };
LinearChoice linear_choice_from(const std::string& s);  // "none", "shared", "per-layer"

// An architecture space with these choices (lab2_space's when all four are the tutorial's):
// ConfigError naming the flag (--num-layers, --num-heads, --hidden-sizes,
// --intermediate-sizes) for an empty list or a value < 1. Smaller spaces fit a CPU budget.
Space architecture_space(const std::vector<int64_t>& layers, const std::vector<int64_t>& heads,
                         const std::vector<int64_t>& hidden, const std::vector<int64_t>& inter);
// "L{2,4} A{2,4} H{128} I{512}"
std::string architecture_text(const Space& arch);

// `arch` (lab2_space() by default) plus the Linear-or-Identity parameter(s).
Space tutorial_space(LinearChoice mode, const Space& arch);
// Replaces the square Linears the trial chose `identity` for; returns their paths.
std::vector<std::string> apply_linear_choice(nn::Module& model, const Params& p);

// ---- Lab 3 ------------------------------------------------------------------------------
// One format of a precision study and the values each of its parameters may take.
struct FormatChoices {
  std::string format;  // a quant kind name: "integer", "mxint8", ...
  std::vector<std::pair<std::string, std::vector<std::string>>> params;  // key -> choices
};

// The formats of `names` ("all": every format) with their default choices; integer's width and
// frac_width choices from `widths` / `frac_widths`. ConfigError naming the flag: an unknown
// format (--formats), an empty list, a width outside 2..32 (--widths), a frac width < 0 or
// larger than the smallest width (--frac-widths).
std::vector<FormatChoices> format_choices(const std::vector<std::string>& names,
                                          const std::vector<int64_t>& widths,
                                          const std::vector<int64_t>& frac_widths);
// Every known format name, in the order of quant's kinds.
std::vector<std::string> all_format_names();

Space precision_space(const std::vector<std::string>& layers,
                      const std::vector<FormatChoices>& formats);
// The trial's quantize config: {"by": "name", "default": {"config": {"name": null}},
// "<layer>": {"config": {"name": ..., "data_in_<k>": v, "weight_<k>": v, "bias_<k>": v}}}.
nlohmann::json precision_quant_config(const Params& p, const std::vector<std::string>& layers);
// Bits per weight averaged over the layers' weights (fp32 = 32) under config `quant`, where
// `sizes[i]` is the number of weights of layers[i].
double average_weight_bits(const nlohmann::json& quant, const std::vector<std::string>& layers,
                           const std::vector<int64_t>& sizes);

}  // namespace mase::search
