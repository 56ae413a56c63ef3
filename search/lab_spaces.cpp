// search/lab_spaces.cpp — Lab 2.1's Linear-or-Identity choice and Lab 3's per-layer precision
// space. Read lab_spaces.h first.
#include "search/lab_spaces.h"

#include <algorithm>

#include "models/layers.h"
#include "quant/format.h"
#include "runtime/error.h"

namespace mase::search {
using nlohmann::json;

// ---- Lab 2.1 ----------------------------------------------------------------------------

LinearChoice linear_choice_from(const std::string& s) {
  if (s == "none") return LinearChoice::none;
  if (s == "shared") return LinearChoice::shared;
  if (s == "per-layer") return LinearChoice::per_layer;
  throw ConfigError(cat("[search] expected --linear-choice none, shared or per-layer, got '", s,
                        "'"));
}

namespace {

// The Linears of a BERT block that are square when the trial's sizes make them so.
const std::vector<std::string> kBlockLinears = {
    "attention.self.query", "attention.self.key", "attention.self.value",
    "attention.output.dense", "intermediate.dense", "output.dense"};

int64_t max_layers(const Space& arch) {
  if (arch.params().empty()) return 0;
  for (const Param& p : arch.params()) {
    if (p.name != "num_layers") continue;
    if (p.kind == Param::Kind::integer) return static_cast<int64_t>(p.high);
    int64_t m = 0;
    for (const std::string& c : p.choices) m = std::max<int64_t>(m, std::stoll(c));
    return m;
  }
  return 2;  // the space does not vary depth: bert-tiny's
}

}  // namespace

Space architecture_space(const std::vector<int64_t>& layers, const std::vector<int64_t>& heads,
                         const std::vector<int64_t>& hidden, const std::vector<int64_t>& inter) {
  Space s;
  const std::pair<const char*, const std::vector<int64_t>*> lists[] = {
      {"num_layers", &layers}, {"num_heads", &heads}, {"hidden_size", &hidden},
      {"intermediate_size", &inter}};
  const char* flags[] = {"--num-layers", "--num-heads", "--hidden-sizes", "--intermediate-sizes"};
  for (size_t i = 0; i < 4; ++i) {
    const auto& [name, values] = lists[i];
    MASE_CHECK(!values->empty(), ConfigError, "[search] expected a non-empty list for ",
               flags[i]);
    std::vector<std::string> choices;
    for (int64_t v : *values) {
      MASE_CHECK(v >= 1, ConfigError, "[search] expected ", flags[i], " >= 1, got ", v);
      choices.push_back(std::to_string(v));
    }
    s.categorical(name, choices);
  }
  return s;
}

std::string architecture_text(const Space& arch) {
  const char* names[] = {"num_layers", "num_heads", "hidden_size", "intermediate_size"};
  const char* letters[] = {"L", "A", "H", "I"};
  std::string out;
  for (size_t i = 0; i < 4; ++i) {
    std::string list;
    for (const std::string& c : arch.at(names[i]).choices) list += (list.empty() ? "" : ",") + c;
    out += cat(i ? " " : "", letters[i], "{", list, "}");
  }
  return out;
}

Space tutorial_space(LinearChoice mode, const Space& arch) {
  Space s = arch;
  if (mode == LinearChoice::shared) s.categorical("linear_layer", {"linear", "identity"});
  if (mode == LinearChoice::per_layer) {
    for (int64_t j = 0; j < max_layers(arch); ++j)
      for (const std::string& l : kBlockLinears)
        s.categorical(cat("bert.encoder.layer.", j, ".", l, "_type"), {"linear", "identity"});
    s.categorical("bert.pooler.dense_type", {"linear", "identity"});
  }
  return s;
}

std::vector<std::string> apply_linear_choice(nn::Module& model, const Params& p) {
  const Values& v = p.values();
  const bool shared = v.count("linear_layer") && p.category("linear_layer") == "identity";
  std::vector<std::string> replaced;
  for (auto& [path, m] : model.named_modules()) {
    auto* lin = dynamic_cast<nn::Linear*>(m.get());
    if (!lin || lin->type_name() != "Linear" || lin->in_features != lin->out_features) continue;
    const std::string key = path + "_type";
    const bool mine = v.count(key) && p.category(key) == "identity";
    if (shared || mine) replaced.push_back(path);
  }
  for (const std::string& path : replaced)
    model.replace_submodule(path, std::make_shared<nn::Identity>());
  return replaced;
}

// ---- Lab 3 ------------------------------------------------------------------------------

std::vector<std::string> all_format_names() {
  std::vector<std::string> names;
  for (quant::Kind k : quant::all_kinds()) names.emplace_back(quant::kind_name(k));
  return names;
}

namespace {

std::vector<std::string> texts(const std::vector<int64_t>& xs) {
  std::vector<std::string> out;
  for (int64_t x : xs) out.push_back(std::to_string(x));
  return out;
}

// Each format's parameters and the values a search tries: 8 bits and a little around it, every
// combination valid (exponent bits leave mantissa bits; block sizes divide 128).
FormatChoices default_choices(const std::string& f) {
  using P = std::vector<std::pair<std::string, std::vector<std::string>>>;
  if (f == "minifloat_ieee" || f == "minifloat_denorm")
    return {f, P{{"width", {"6", "8", "12"}}, {"exponent_width", {"3", "4"}}}};
  if (f == "log") return {f, P{{"width", {"4", "6", "8"}}}};
  if (f == "block_fp")
    return {f, P{{"width", {"4", "6", "8"}}, {"exponent_width", {"8"}},
                 {"block_size", {"16", "32"}}}};
  if (f == "block_minifloat")
    return {f, P{{"width", {"6", "8"}}, {"exponent_width", {"3", "4"}},
                 {"exponent_bias_width", {"8"}}, {"block_size", {"16", "32"}}}};
  if (f == "block_log")
    return {f, P{{"width", {"4", "6", "8"}}, {"exponent_bias_width", {"8"}},
                 {"block_size", {"16", "32"}}}};
  if (f == "binary_residual") return {f, P{{"levels", {"1", "2", "3"}}}};
  if (f == "ternary") return {f, P{{"scaling", {"true", "false"}}}};
  return {f, P{}};  // binary, binary_scaling (deterministic, bipolar), MX: nothing to choose
}

void check_list(bool empty, const char* flag) {
  MASE_CHECK(!empty, ConfigError, "[search] expected a non-empty list for ", flag, ", got none");
}

}  // namespace

std::vector<FormatChoices> format_choices(const std::vector<std::string>& names,
                                          const std::vector<int64_t>& widths,
                                          const std::vector<int64_t>& frac_widths) {
  check_list(names.empty(), "--formats");
  check_list(widths.empty(), "--widths");
  check_list(frac_widths.empty(), "--frac-widths");
  for (int64_t w : widths)
    MASE_CHECK(w >= 2 && w <= 32, ConfigError, "[search] expected --widths in 2..32, got ", w,
               " (integer formats hold at most 32 bits and need a sign bit)");
  const int64_t narrowest = *std::min_element(widths.begin(), widths.end());
  for (int64_t f : frac_widths)
    MASE_CHECK(f >= 0 && f <= narrowest, ConfigError,
               "[search] expected --frac-widths in 0..", narrowest,
               " (no wider than the narrowest of --widths), got ", f);
  std::vector<std::string> wanted = names;
  if (names.size() == 1 && names[0] == "all") wanted = all_format_names();
  const std::vector<std::string> known = all_format_names();
  std::vector<FormatChoices> out;
  for (const std::string& n : wanted) {
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError(cat("[search] --formats: unknown format '", n, "' (known: ", list,
                            ", or all)"));
    }
    if (n == "integer")
      out.push_back({n, {{"width", texts(widths)}, {"frac_width", texts(frac_widths)}}});
    else
      out.push_back(default_choices(n));
  }
  return out;
}

Space precision_space(const std::vector<std::string>& layers,
                      const std::vector<FormatChoices>& formats) {
  Space s;
  std::vector<std::string> names = {"full"};
  for (const FormatChoices& f : formats) names.push_back(f.format);
  for (const std::string& layer : layers) {
    s.categorical(layer + ":format", names);
    for (const FormatChoices& f : formats)
      for (const auto& [key, choices] : f.params)
        s.categorical(cat(layer, ":", f.format, ".", key), choices);
  }
  return s;
}

namespace {

json value_of(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return std::stoll(text);
}

}  // namespace

json precision_quant_config(const Params& p, const std::vector<std::string>& layers) {
  json cfg = {{"by", "name"}, {"default", {{"config", {{"name", nullptr}}}}}};
  for (const std::string& layer : layers) {
    const std::string& format = p.category(layer + ":format");
    if (format == "full") continue;
    json c = {{"name", format}};
    const std::string prefix = cat(layer, ":", format, ".");
    for (const auto& [name, internal] : p.values()) {
      if (!name.starts_with(prefix)) continue;
      const std::string key = name.substr(prefix.size());
      for (const char* role : {"data_in_", "weight_", "bias_"})
        c[std::string(role) + key] = value_of(p.category(name));
    }
    cfg[layer] = {{"config", c}};
  }
  return cfg;
}

double average_weight_bits(const json& quant, const std::vector<std::string>& layers,
                           const std::vector<int64_t>& sizes) {
  double bits = 0, weights = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    double b = 32;
    if (quant.contains(layers[i]) && !quant[layers[i]]["config"]["name"].is_null())
      b = quant::parse_format(quant[layers[i]]["config"], "weight_", layers[i])
              .weight_bits_per_element();
    bits += b * static_cast<double>(sizes[i]);
    weights += static_cast<double>(sizes[i]);
  }
  return weights > 0 ? bits / weights : 32;
}

}  // namespace mase::search
