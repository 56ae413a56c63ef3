// quant/passes.cpp — the quantize pass, the compression pipeline and config files (see
// passes.h). The prune pass and mask baking are in prune_pass.cpp.
#include "quant/passes.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "models/json_io.h"
#include "quant/quantized_linear.h"
#include "quant/report_table.h"

namespace mase::quant {
namespace {

using nlohmann::json;

std::string node_name(std::string path) {
  std::replace(path.begin(), path.end(), '.', '_');
  return path;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// One "<key>": {"config": {...}} entry of the quantize config.
struct Entry {
  std::string key;
  const json* config = nullptr;  // the inner {"name": ..., ...}
  std::regex re;
  bool matched = false;
};

const json* inner_config(const json& entry, const std::string& key) {
  MASE_CHECK(entry.is_object() && entry.contains("config") && entry["config"].is_object() &&
                 entry.size() == 1,
             ConfigError, "[quantize] expected \"", key,
             "\" to be {\"config\": {\"name\": <format>, ...}}, got ", entry.dump());
  return &entry["config"];
}

// Leave the layer unquantized: an empty config, a null "name" or "bypass": true. A config with
// format keys but no "name" is not one of these: a misspelled "name" ("nmae") must not silently
// leave the layer fp32, so parse_linear_config reports it (missing 'name', unknown key 'nmae').
bool leaves_unquantized(const json& c) {
  if (c.contains("bypass") && c["bypass"] == true) return true;
  if (c.contains("name")) return c["name"].is_null();
  return c.empty();
}

// Levenshtein distance between a and b (small strings: layer paths).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `key`, for "did you mean".
std::string nearest(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates)
    if (size_t d = edit_distance(key, c); d < best_d) best_d = d, best = c;
  return best;
}

}  // namespace

// ---- quantize ------------------------------------------------------------------------------

QuantizeReport quantize(nn::Module& model, const json& config) {
  MASE_CHECK(config.is_object(), ConfigError, "[quantize] expected a config object, got ",
             config.dump());
  MASE_CHECK(config.contains("by") && config["by"].is_string(), ConfigError,
             "[quantize] missing \"by\": \"type\", \"name\" or \"regex\"");
  const std::string by = config["by"].get<std::string>();
  MASE_CHECK(by == "type" || by == "name" || by == "regex", ConfigError,
             "[quantize] expected \"by\" to be \"type\", \"name\" or \"regex\", got \"", by, "\"");
  uint64_t seed = 0;
  if (config.contains("seed")) {
    MASE_CHECK(config["seed"].is_number_integer() && config["seed"].get<int64_t>() >= 0,
               ConfigError, "[quantize] expected \"seed\" to be a non-negative integer, got ",
               config["seed"].dump());
    seed = config["seed"].get<uint64_t>();
  }
  const json* fallback =
      config.contains("default") ? inner_config(config["default"], "default") : nullptr;
  std::vector<Entry> entries;
  for (const auto& [key, value] : config.items()) {
    if (key == "by" || key == "default" || key == "seed") continue;
    Entry e;
    e.key = key;
    e.config = inner_config(value, key);
    if (by == "regex") {
      try {
        e.re = std::regex(key);
      } catch (const std::regex_error& err) {
        throw ConfigError(cat("[quantize] invalid regex '", key, "': ", err.what()));
      }
    }
    entries.push_back(std::move(e));
  }

  // plan: which config each Linear gets; every config is validated before the model changes
  struct Plan {
    std::string path;
    nn::Linear* layer;
    const json* config;  // null: untouched
    uint64_t seed;
  };
  std::vector<Plan> plan;
  std::vector<std::string> paths;
  int64_t index = 0;
  for (auto& [path, lin] : linear_layers(model)) {
    paths.push_back(path);
    Entry* hit = nullptr;
    for (Entry& e : entries) {
      const bool match = by == "type"   ? lower(e.key) == "linear"
                         : by == "name" ? e.key == path || e.key == node_name(path)
                                        : std::regex_search(path, e.re) ||
                                              std::regex_search(node_name(path), e.re);
      if (!match) continue;
      MASE_CHECK(!hit, ConfigError, "[quantize] layer '", path, "' is matched by both '", hit->key,
                 "' and '", e.key, "' (make the ", by, " keys disjoint)");
      hit = &e;
    }
    if (hit) hit->matched = true;
    const json* c = hit ? hit->config : fallback;
    if (c && leaves_unquantized(*c)) c = nullptr;
    if (c) (void)parse_linear_config(*c, path);  // ConfigError naming the layer and the key
    plan.push_back({path, lin, c, seed + 4 * static_cast<uint64_t>(index++)});
  }

  // A key that matches nothing is a typo until shown otherwise: refused before any change.
  for (const Entry& e : entries) {
    if (e.matched) continue;
    const std::vector<std::string> known = by == "type" ? std::vector<std::string>{"linear"} : paths;
    std::string list;
    for (const std::string& p : known) list += (list.empty() ? "" : ", ") + p;
    std::vector<std::string> suggest = known;  // "defualt" is the fallback section misspelled
    suggest.push_back("default");
    throw ConfigError(cat("[quantize] expected each ", by, " key to match a layer, got '", e.key,
                          "' which matches none (did you mean '", nearest(e.key, suggest), "'? the ",
                          by == "type" ? "quantizable types are: " : "Linear layers are: ", list,
                          ")"));
  }
  QuantizeReport report;
  for (const Plan& p : plan) {
    QuantizeRow row{p.path, p.layer->type_name(), "", "none", "none", "none", "none"};
    auto* q = dynamic_cast<QuantizedLinear*>(p.layer);
    if (p.config && q) {
      q->set_quant_config(*p.config, p.seed, p.path);
    } else if (p.config) {
      auto made = std::make_shared<QuantizedLinear>(*p.layer, *p.config, p.seed, p.path);
      model.replace_submodule(p.path, made);
      q = made.get();
    }
    row.new_type = q ? q->type_name() : p.layer->type_name();
    if (q && q->is_quantized()) {
      LinearQuantizers& qs = q->quantizers();
      row.data_in = qs.data_in.str();
      row.weight = qs.weight.str();
      row.bias = qs.bias.str();
      row.data_out = qs.data_out.str();
    }
    report.layers.push_back(std::move(row));
  }
  return report;
}

int64_t QuantizeReport::quantized() const {
  return std::count_if(layers.begin(), layers.end(), [](const QuantizeRow& r) {
    return r.weight != "none" || r.data_in != "none";
  });
}

std::string QuantizeReport::str() const {
  bool out = false;
  for (const QuantizeRow& r : layers) out = out || r.data_out != "none";
  ReportTable t({"layer", "old type", "new type", "data_in", "weight", "bias"});
  if (out) t.add_column("data_out");
  for (const QuantizeRow& r : layers) {
    std::vector<std::string> cells{r.layer, r.old_type, r.new_type, r.data_in, r.weight, r.bias};
    if (out) cells.push_back(r.data_out);
    t.add_row(cells);
  }
  std::string s =
      cat("quantize: ", quantized(), " of ", layers.size(), " Linear layers quantized\n", t.str());
  for (const std::string& w : warnings) s += w + "\n";
  return s;
}

json QuantizeReport::to_json() const {
  json rows = json::array();
  for (const QuantizeRow& r : layers)
    rows.push_back({{"layer", r.layer},
                    {"old_type", r.old_type},
                    {"new_type", r.new_type},
                    {"data_in", r.data_in},
                    {"weight", r.weight},
                    {"bias", r.bias},
                    {"data_out", r.data_out}});
  return {{"layers", rows}, {"quantized", quantized()}, {"warnings", warnings}};
}

// ---- the compression pipeline --------------------------------------------------------------

void check_compress_sections(const json& config) {
  MASE_CHECK(config.is_object(), ConfigError, "[compress] expected a config object, got ",
             config.dump());
  for (const auto& [key, v] : config.items())
    MASE_CHECK(key == "quantize" || key == "prune", ConfigError, "[compress] unknown section '",
               key, "' (sections are quantize and prune, applied in that order)");
}

CompressReport compress(nn::Module& model, const json& config) {
  check_compress_sections(config);
  CompressReport r;
  if (config.contains("quantize")) {
    r.quantize = quantize(model, config["quantize"]);
    r.quantized = true;
  }
  if (config.contains("prune")) {
    r.prune = prune(model, config["prune"]);
    r.pruned = true;
  }
  return r;
}

std::string CompressReport::str() const {
  std::string s;
  if (quantized) s += quantize.str();
  if (pruned) s += prune.str();
  return s.empty() ? "compress: nothing to do (no quantize or prune section)\n" : s;
}

json CompressReport::to_json() const {
  json j = json::object();
  if (quantized) j["quantize"] = quantize.to_json();
  if (pruned) j["prune"] = prune.to_json();
  return j;
}

json read_config_file(const std::string& path) {
  namespace fs = std::filesystem;
  MASE_CHECK(fs::is_regular_file(path), IoError, "[config] cannot open ", path, " (no such file)");
  if (fs::path(path).extension() == ".toml") {
    try {
      toml::table table = toml::parse_file(path);
      std::ostringstream os;
      os << toml::json_formatter{table};
      return nn::parse_json_text(os.str(), path, "config");
    } catch (const toml::parse_error& e) {
      const auto& where = e.source().begin;
      throw IoError(
          cat("[config] ", path, ":", where.line, ":", where.column, ": ", e.description()));
    }
  }
  return nn::parse_json_file(path, "config");
}

}  // namespace mase::quant
