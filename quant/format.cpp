// quant/format.cpp — format names, MASE-key parsing and validation (see format.h).
//
// The ranges checked here come from two places: formats.md (width 1..32, frac_width ≤ width,
// block_size ≥ 1, ...) and f32 storage. Fake-quantized tensors are stored in f32, so a format
// whose values f32 cannot hold exactly is refused with a ConfigError that says why, e.g. a
// minifloat with more than 23 mantissa bits, or a bias whose smallest subnormal is below
// f32's 2^-149. (Values above f32's max are simply not part of the set: see
// runtime/kernels/quant_scalar.h.)
#include "quant/format.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"

namespace mase::quant {

using nlohmann::json;

namespace {

struct KindInfo {
  Kind kind;
  std::string_view name;
};
constexpr KindInfo kKinds[] = {
    {Kind::integer, "integer"},
    {Kind::minifloat_ieee, "minifloat_ieee"},
    {Kind::minifloat_denorm, "minifloat_denorm"},
    {Kind::log, "log"},
    {Kind::binary, "binary"},
    {Kind::binary_scaling, "binary_scaling"},
    {Kind::binary_residual, "binary_residual"},
    {Kind::ternary, "ternary"},
    {Kind::block_fp, "block_fp"},
    {Kind::block_minifloat, "block_minifloat"},
    {Kind::block_log, "block_log"},
    {Kind::mxint8, "mxint8"},
    {Kind::mxfp8_e4m3, "mxfp8_e4m3"},
    {Kind::mxfp8_e5m2, "mxfp8_e5m2"},
    {Kind::mxfp6_e3m2, "mxfp6_e3m2"},
    {Kind::mxfp6_e2m3, "mxfp6_e2m3"},
    {Kind::mxfp4_e2m1, "mxfp4_e2m1"},
};

// Every parameter key of formats.md; a key outside this list is unknown.
const std::vector<std::string> kVocabulary = {"width", "frac_width", "exponent_width",
                                              "exponent_bias", "exponent_bias_width",
                                              "block_size", "stochastic", "bipolar", "levels",
                                              "scaling"};
const std::vector<std::string> kPrefixes = {"data_in_", "weight_", "bias_", "data_out_"};

// Keys each kind requires (the others it takes are optional, with the defaults of formats.md).
const std::vector<std::string>& required_keys(Kind k) {
  static const std::vector<std::string> none, w = {"width"}, we = {"width", "exponent_width"},
      bfp = {"width", "exponent_width", "block_size"},
      bmf = {"width", "exponent_width", "exponent_bias_width", "block_size"},
      blg = {"width", "exponent_bias_width", "block_size"};
  switch (k) {
    case Kind::integer: case Kind::log: return w;
    case Kind::minifloat_ieee: case Kind::minifloat_denorm: return we;
    case Kind::block_fp: return bfp;
    case Kind::block_minifloat: return bmf;
    case Kind::block_log: return blg;
    default: return none;
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// An integer value of `key` (JSON integer, or a float with an integral value; for block_size
// also MASE's list form [1, 16], whose last entry is the block length along the last dim).
int read_int(const json& v, const std::string& key, std::string_view where) {
  const json* x = &v;
  if (v.is_array() && !v.empty() && key.ends_with("block_size")) x = &v.back();
  if (x->is_number_integer()) {
    int64_t i = x->get<int64_t>();
    MASE_CHECK(i >= -100000 && i <= 100000, ConfigError, "[quant] ", where, ": expected ", key,
               " to be a small integer, got ", i);
    return static_cast<int>(i);
  }
  if (x->is_number_float()) {
    double d = x->get<double>();
    MASE_CHECK(std::isfinite(d) && d == std::floor(d) && std::abs(d) <= 100000, ConfigError,
               "[quant] ", where, ": expected ", key, " to be an integer, got ", x->dump());
    return static_cast<int>(d);
  }
  throw ConfigError(cat("[quant] ", where, ": expected ", key, " to be an integer, got ", v.dump()));
}

bool read_bool(const json& v, const std::string& key, std::string_view where) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1))
    return v.get<int64_t>() == 1;
  throw ConfigError(cat("[quant] ", where, ": expected ", key, " to be true or false, got ", v.dump()));
}

void check_range(int v, int lo, int hi, const std::string& key, std::string_view where,
                 std::string_view hint = "") {
  MASE_CHECK(v >= lo && v <= hi, ConfigError, "[quant] ", where, ": expected ", key, " in ", lo,
             "..", hi, ", got ", v, hint.empty() ? "" : " (", hint, hint.empty() ? "" : ")");
}

Kind parse_kind(const json& cfg, std::string_view where) {
  MASE_CHECK(cfg.is_object(), ConfigError, "[quant] ", where, ": expected a JSON object, got ",
             cfg.dump());
  MASE_CHECK(cfg.contains("name"), ConfigError, "[quant] ", where,
             ": missing required key 'name' (the format, e.g. \"integer\")");
  const json& n = cfg.at("name");
  MASE_CHECK(n.is_string(), ConfigError, "[quant] ", where, ": expected 'name' to be a string, got ",
             n.dump());
  auto k = kind_from_name(n.get<std::string>());
  if (!k) {
    std::vector<std::string> names;
    for (const auto& ki : kKinds) names.emplace_back(ki.name);
    throw ConfigError(cat("[quant] ", where, ": unknown format name '", n.get<std::string>(),
                          "' (known: ", join(names), ")"));
  }
  return *k;
}

}  // namespace

std::string_view kind_name(Kind k) {
  for (const auto& ki : kKinds)
    if (ki.kind == k) return ki.name;
  return "?";
}

std::optional<Kind> kind_from_name(std::string_view name) {
  if (name == "fixed") return Kind::integer;  // MASE's alias
  for (const auto& ki : kKinds)
    if (ki.name == name) return ki.kind;
  return std::nullopt;
}

const std::vector<Kind>& all_kinds() {
  static const std::vector<Kind> v = [] {
    std::vector<Kind> r;
    for (const auto& ki : kKinds) r.push_back(ki.kind);
    return r;
  }();
  return v;
}


const std::vector<std::string>& Format::keys(Kind k) {
  static const std::vector<std::string> integer = {"width", "frac_width"},
      mini = {"width", "exponent_width", "exponent_bias"}, log = {"width", "exponent_bias"},
      bin = {"stochastic", "bipolar"}, res = {"levels"}, ter = {"scaling"},
      bfp = {"width", "exponent_width", "exponent_bias", "block_size"},
      bmf = {"width", "exponent_width", "exponent_bias_width", "block_size"},
      blg = {"width", "exponent_bias_width", "block_size"}, mx = {"block_size"};
  switch (k) {
    case Kind::integer: return integer;
    case Kind::minifloat_ieee: case Kind::minifloat_denorm: return mini;
    case Kind::log: return log;
    case Kind::binary: case Kind::binary_scaling: return bin;
    case Kind::binary_residual: return res;
    case Kind::ternary: return ter;
    case Kind::block_fp: return bfp;
    case Kind::block_minifloat: return bmf;
    case Kind::block_log: return blg;
    default: return mx;
  }
}

std::string Format::str() const {
  std::ostringstream os;
  os << kind_name(kind) << "(";
  bool first = true;
  for (const std::string& key : keys(kind)) {
    os << (first ? "" : ", ") << key << "=";
    first = false;
    if (key == "width") os << width;
    else if (key == "frac_width") os << frac_width;
    else if (key == "exponent_width") os << exponent_width;
    else if (key == "exponent_bias") os << exponent_bias;
    else if (key == "exponent_bias_width") os << exponent_bias_width;
    else if (key == "block_size") os << block_size;
    else if (key == "levels") os << levels;
    else if (key == "stochastic") os << (stochastic ? "true" : "false");
    else if (key == "bipolar") os << (bipolar ? "true" : "false");
    else if (key == "scaling") os << (scaling ? "true" : "false");
  }
  if (mase_compat) os << ", compat=mase";
  os << ")";
  return os.str();
}

double Format::bits_per_element() const {
  switch (kind) {
    case Kind::binary: case Kind::binary_scaling: return 1;
    case Kind::binary_residual: return levels;
    case Kind::ternary: return 2;
    case Kind::block_fp: return width + double(exponent_width) / block_size;
    case Kind::block_minifloat: case Kind::block_log:
      return width + double(exponent_bias_width) / block_size;
    case Kind::mxint8: case Kind::mxfp8_e4m3: case Kind::mxfp8_e5m2: return 8 + 8.0 / 32;
    case Kind::mxfp6_e3m2: case Kind::mxfp6_e2m3: return 6 + 8.0 / 32;
    case Kind::mxfp4_e2m1: return 4 + 8.0 / 32;
    default: return width;
  }
}

void Format::validate(std::string_view where, std::string_view prefix) const {
  const int W = width, E = exponent_width, b = exponent_bias;
  MASE_CHECK(!mase_compat || is_scalar(kind), ConfigError, "[quant] ", where, ": \"compat\": ",
             "\"mase\" is implemented for integer, minifloat_ieee, minifloat_denorm and log, got ",
             kind_name(kind), " (docs/formats.md tables how the other formats differ from MASE)");
  auto key = [&](const char* k) { return cat(prefix, k); };  // "weight_width"
  auto needs_width = [&] { check_range(W, 1, 32, key("width"), where); };
  switch (kind) {
    case Kind::integer:
      needs_width();
      check_range(W, 2, 32, key("width"), where, "two's complement needs a sign bit and one more");
      MASE_CHECK(frac_width <= W, ConfigError, "[quant] ", where, ": expected ", key("frac_width"),
                 " <= ", key("width"), ", got ", frac_width, " > ", W);
      check_range(frac_width, 0, W, key("frac_width"), where);
      break;
    case Kind::minifloat_ieee:
    case Kind::minifloat_denorm: {
      needs_width();
      check_range(E, 1, 8, key("exponent_width"), where, "f32 storage has 8 exponent bits");
      const int M = W - E - 1;
      const bool denorm = kind == Kind::minifloat_denorm;
      MASE_CHECK(M >= (denorm ? 1 : 0), ConfigError, "[quant] ", where, ": expected ", key("width"),
                 " >= ", key("exponent_width"), " + ", denorm ? 2 : 1, ", got ", W, " and ", E,
                 denorm ? " (minifloat_denorm without mantissa bits holds only zero)" : "");
      MASE_CHECK(M <= 23, ConfigError, "[quant] ", where, ": ", key("width"), " ", W, " with ",
                 key("exponent_width"), " ", E, " leaves ", M,
                 " mantissa bits, f32 storage holds at most 23 (use a width <= ", E + 24, ")");
      // smallest positive value: 2^(1-b-M) (ieee subnormal) or 2^(-b-M) (denorm, code 0)
      const int lo = (denorm ? -b : 1 - b) - M;
      MASE_CHECK(lo >= -149, ConfigError, "[quant] ", where, ": ", key("exponent_bias"), " ", b,
                 " makes the smallest value 2^", lo, ", below f32's smallest 2^-149 (use a smaller bias)");
      MASE_CHECK(lo + M <= 127, ConfigError, "[quant] ", where, ": ", key("exponent_bias"), " ", b,
                 " puts every nonzero value beyond f32's range (use a larger bias)");
      break;
    }
    case Kind::log: {
      needs_width();
      check_range(W, 2, 32, key("width"), where, "a sign bit and at least one exponent bit");
      const int64_t kmin = 1 - int64_t(b), kmax = (int64_t(1) << (W - 1)) - 1 - b;
      MASE_CHECK(std::max<int64_t>(kmin, -149) <= std::min<int64_t>(kmax, 127), ConfigError,
                 "[quant] ", where, ": ", key("exponent_bias"), " ", b, " puts every power 2^", kmin,
                 "..2^", kmax, " outside f32's range");
      break;
    }
    case Kind::binary: case Kind::binary_scaling: case Kind::ternary: break;
    case Kind::binary_residual: check_range(levels, 1, 8, key("levels"), where); break;
    case Kind::block_fp:
      needs_width();
      check_range(W, 2, 25, key("width"), where, "a sign bit and 1..24 magnitude bits");
      check_range(E, 1, 8, key("exponent_width"), where);
      check_range(block_size, 1, 1 << 20, key("block_size"), where);
      // The shared exponent e lies in −b..2^E−1−b and every f32 block has floor(log2 amax) in
      // −149..127. b ≥ −127 keeps e ≤ 127 for every block (e = 128 would round f32's largest
      // values to 2^128 = inf); b ≤ 2^E + 150 − W keeps the step 2^(e+1−M) of the top
      // exponent ≥ 2^−149, so the value a block saturates to, (2^M − 1)·2^(2^E−b−M), is an f32.
      check_range(b, -127, (1 << E) + 150 - W, key("exponent_bias"), where,
                  "a lower bias rounds f32's largest values to inf, a higher one saturates every "
                  "block to a value finer than f32's 2^-149");
      break;
    case Kind::block_minifloat:
      needs_width();
      check_range(E, 1, 8, key("exponent_width"), where);
      check_range(W, E + 1, E + 24, key("width"), where, "sign + exponent_width + 0..23 mantissa bits");
      check_range(exponent_bias_width, 0, 8, key("exponent_bias_width"), where);
      check_range(block_size, 1, 1 << 20, key("block_size"), where);
      break;
    case Kind::block_log:
      needs_width();
      check_range(W, 2, 32, key("width"), where);
      check_range(exponent_bias_width, 0, 16, key("exponent_bias_width"), where);
      check_range(block_size, 1, 1 << 20, key("block_size"), where);
      break;
    default:  // MX: OCP MX v1.0 fixes the block at 32 elements
      MASE_CHECK(block_size == 32, ConfigError, "[quant] ", where, ": expected ", key("block_size"),
                 " 32 for ", kind_name(kind), " (OCP MX v1.0), got ", block_size);
  }
}

Format make_format(std::string_view name, const json& params, std::string_view where) {
  json cfg = params.is_null() ? json::object() : params;
  cfg["name"] = std::string(name);
  return parse_format(cfg, "", where);
}

Format make_format(std::string_view name) { return make_format(name, json::object()); }

// "compat": "mase" (MASE's formulas) or "mase-cpp" (the default: the nearest-value rule),
// one key for every tensor of a layer.
static bool read_compat(const json& cfg, std::string_view where) {
  auto it = cfg.find("compat");
  if (it == cfg.end()) return false;
  MASE_CHECK(it->is_string() && (*it == "mase" || *it == "mase-cpp"), ConfigError, "[quant] ",
             where, ": expected \"compat\": \"mase\" or \"mase-cpp\", got ",
             it->is_string() ? it->get<std::string>() : std::string(it->type_name()));
  return *it == "mase";
}

Format parse_format(const json& cfg, std::string_view prefix_sv, std::string_view where) {
  const Kind kind = parse_kind(cfg, where);
  const std::string prefix(prefix_sv);
  Format f;
  f.kind = kind;
  for (const std::string& key : required_keys(kind))
    MASE_CHECK(cfg.contains(prefix + key), ConfigError, "[quant] ", where, ": missing required key '",
               prefix, key, "' for ", kind_name(kind), " (it takes: ", join(Format::keys(kind)), ")");
  auto get_int = [&](const std::string& key, int dflt) {
    auto it = cfg.find(prefix + key);
    return it == cfg.end() ? dflt : read_int(*it, prefix + key, where);
  };
  auto get_bool = [&](const std::string& key, bool dflt) {
    auto it = cfg.find(prefix + key);
    return it == cfg.end() ? dflt : read_bool(*it, prefix + key, where);
  };
  f.width = get_int("width", 8);
  f.exponent_width = get_int("exponent_width", 0);
  f.exponent_bias_width = get_int("exponent_bias_width", 0);
  f.levels = get_int("levels", 2);
  f.stochastic = get_bool("stochastic", false);
  f.bipolar = get_bool("bipolar", true);
  f.scaling = get_bool("scaling", false);
  // defaults that depend on other parameters (formats.md)
  f.frac_width = get_int("frac_width", f.width / 2);
  f.block_size = get_int("block_size", is_mx(kind) ? 32 : 0);
  const int E = f.exponent_width;
  int bias_default = 0;
  if (kind == Kind::log) bias_default = f.width >= 2 && f.width <= 32 ? (1 << (f.width - 2)) - 1 : 0;
  else if (E >= 1 && E <= 30) bias_default = (1 << (E - 1)) - 1;
  f.exponent_bias = get_int("exponent_bias", bias_default);
  f.mase_compat = read_compat(cfg, where);
  f.validate(where, prefix);
  return f;
}

LinearQuantConfig parse_linear_config(const json& cfg, std::string_view layer) {
  const std::string where = cat("layer '", layer, "'");
  MASE_CHECK(cfg.is_object(), ConfigError, "[quant] ", where, ": expected a JSON object, got ", cfg.dump());
  LinearQuantConfig out;
  if (auto it = cfg.find("bypass"); it != cfg.end() && read_bool(*it, "bypass", where)) {
    out.bypass = true;
    return out;
  }
  if (auto it = cfg.find("name"); it != cfg.end() && it->is_null()) {
    out.bypass = true;
    return out;
  }
  const Kind kind = parse_kind(cfg, where);
  const auto& taken = Format::keys(kind);
  bool has_out = false;
  for (const auto& [key, value] : cfg.items()) {
    if (key == "name" || key == "bypass" || key == "compat") continue;
    bool known = false;
    for (const std::string& p : kPrefixes) {
      if (!key.starts_with(p)) continue;
      const std::string param = key.substr(p.size());
      if (std::find(kVocabulary.begin(), kVocabulary.end(), param) == kVocabulary.end()) continue;
      known = true;
      MASE_CHECK(std::find(taken.begin(), taken.end(), param) != taken.end(), ConfigError, "[quant] ",
                 where, ": key '", key, "' is not a parameter of ", kind_name(kind), " (it takes: ",
                 taken.empty() ? "no parameters" : join(taken), ")");
      if (p == "data_out_") has_out = true;
    }
    MASE_CHECK(known, ConfigError, "[quant] ", where, ": unknown key '", key,
               "' (keys are name, bypass, compat and {data_in,weight,bias,data_out}_{", join(kVocabulary), "})");
  }
  out.data_in = parse_format(cfg, "data_in_", where);
  out.weight = parse_format(cfg, "weight_", where);
  out.bias = parse_format(cfg, "bias_", where);
  if (has_out) out.data_out = parse_format(cfg, "data_out_", where);
  return out;
}

}  // namespace mase::quant
