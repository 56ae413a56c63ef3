// quant/checkpoint.cpp — compressed model directories (see checkpoint.h).
#include "quant/checkpoint.h"

#include <filesystem>
#include <fstream>

#include "runtime/atomic_file.h"
#include "models/checkpoint.h"
#include "models/json_io.h"
#include "models/lora.h"
#include "models/module_registry.h"
#include "models/safetensors.h"
#include "quant/integer_linear.h"
#include "quant/mxint8_linear.h"
#include "quant/quantized_linear.h"

namespace mase::quant {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr const char* kSidecar = "compression.json";
constexpr const char* kFormat = "mase-compression";
}  // namespace

namespace {
// An Int8Linear (integer_inference) keeps only its packed int8 codes, which no checkpoint
// format here holds: saving it would write a directory without its weights, which then fails
// to load ("missing key ...weight"). Refused before anything is written.
void refuse_int8_layers(nn::Module& model, const char* who) {
  for (auto& [path, m] : model.named_modules())
    MASE_CHECK(!dynamic_cast<Int8Linear*>(m.get()), ConfigError, "[", who, "] layer '", path,
               "' is an Int8Linear (integer_inference), which keeps only packed int8 codes and "
               "cannot be saved: save the model before integer_inference()");
}
}  // namespace

json compression_layers(nn::Module& model) {
  refuse_int8_layers(model, "save_compressed");
  json layers = json::object();
  for (auto& [path, m] : model.named_modules()) {
    if (auto* q = dynamic_cast<QuantizedLinear*>(m.get())) {
      json d = q->describe();
      d["type"] = "QuantizedLinear";
      layers[path] = d;
    } else if (auto* mx = dynamic_cast<MxInt8Linear*>(m.get())) {
      layers[path] = {{"type", "MxInt8Linear"},
                      {"in_features", mx->in_features},
                      {"out_features", mx->out_features},
                      {"bias", mx->bias.defined()}};
    } else if (auto* lora = dynamic_cast<nn::LoraLinear*>(m.get())) {  // Lab 0's adapters
      layers[path] = {{"type", "LoraLinear"}, {"rank", lora->rank}, {"alpha", lora->alpha},
                      {"dropout", lora->dropout}};
    }
  }
  return layers;
}

namespace {

// The module an entry of "layers" describes, over the fresh Linear it replaces.
nn::ModulePtr rebuild_layer(const nn::Linear& base, const json& d, const std::string& path,
                            const std::string& source) {
  auto fail = [&](const std::string& what) {
    return ConfigError(cat("[load_compressed] ", source, ": layer '", path, "': ", what));
  };
  if (!d.is_object() || !d.contains("type") || !d["type"].is_string())
    throw fail(cat("expected an object with a \"type\", got ", d.dump()));
  const std::string type = d["type"];
  if (type == "QuantizedLinear") return QuantizedLinear::from_description(base, d, path);
  if (type == "MxInt8Linear") {
    const int64_t in = d.value("in_features", int64_t{-1}),
                  out = d.value("out_features", int64_t{-1});
    if (in != base.in_features || out != base.out_features)
      throw fail(cat("MxInt8Linear ", in, " -> ", out, " does not fit the model's Linear ",
                     base.in_features, " -> ", base.out_features));
    return std::make_shared<MxInt8Linear>(in, out, d.value("bias", true));
  }
  if (type == "LoraLinear")  // over the fresh Linear: its W and b are then loaded, frozen
    return std::make_shared<nn::LoraLinear>(base, d.value("rank", int64_t{0}),
                                            d.value("alpha", 0.0), d.value("dropout", 0.0));
  throw fail(cat("unknown type '", type,
                 "' (expected QuantizedLinear, MxInt8Linear or LoraLinear)"));
}

}  // namespace

void register_module_types() {
  // {"in_features", "out_features", "bias"} + describe(): a fresh Linear of those sizes, wrapped
  // as described; the weights and masks are loaded afterwards
  auto quantized = [](const json& c) -> nn::ModulePtr {
    auto base = std::make_shared<nn::Linear>(c.at("in_features").get<int64_t>(),
                                             c.at("out_features").get<int64_t>(),
                                             c.at("bias").get<bool>());
    return QuantizedLinear::from_description(*base, c, "graph");
  };
  nn::register_module_type("QuantizedLinear", quantized);
  nn::register_module_type("PrunedLinear", quantized);
  nn::register_module_type("MxInt8Linear", [](const json& c) -> nn::ModulePtr {
    return std::make_shared<MxInt8Linear>(c.at("in_features").get<int64_t>(),
                                          c.at("out_features").get<int64_t>(),
                                          c.at("bias").get<bool>());
  });
}

void apply_compression_layers(nn::Module& model, const json& layers, const std::string& source) {
  MASE_CHECK(layers.is_object(), ConfigError, "[load_compressed] ", source,
             ": expected \"layers\" to be an object, got ", layers.dump());
  for (const auto& [path, d] : layers.items()) {
    auto* base = dynamic_cast<nn::Linear*>(model.submodule(path).get());
    MASE_CHECK(base, ConfigError, "[load_compressed] ", source, ": layer '", path, "' is a ",
               model.submodule(path)->type_name(), " in the model, not a Linear");
    try {
      model.replace_submodule(path, rebuild_layer(*base, d, path, source));
    } catch (const json::exception& e) {  // a value of the wrong type
      throw ConfigError(cat("[load_compressed] ", source, ": layer '", path, "': ", e.what()));
    }
  }
}

void apply_weight_masks(nn::Module& model) {
  refuse_int8_layers(model, "save_compressed");  // the first step of every save (checkpoint.h)
  for (auto& [path, m] : model.named_modules())
    if (auto* q = dynamic_cast<QuantizedLinear*>(m.get())) q->apply_weight_mask_();
}

void save_compressed(nn::BertForSequenceClassification& model, const std::string& dir) {
  apply_weight_masks(model);
  nn::save_pretrained(model, dir);
  save_sidecar(model, dir);
}

void save_sidecar(nn::Module& model, const std::string& dir) {
  const std::string sidecar_path = (fs::path(dir) / kSidecar).string();
  json layers = compression_layers(model);
  if (layers.empty()) {
    std::error_code ec;
    fs::remove(sidecar_path, ec);  // a stale sidecar would rebuild layers this model lacks
    MASE_CHECK(!ec, IoError, "[save_compressed] cannot remove ", sidecar_path, ": ", ec.message());
    return;
  }
  json sidecar = {{"format", kFormat}, {"version", 1}, {"layers", layers}};
  write_text_atomic(sidecar_path, sidecar.dump(2) + "\n");
}

bool apply_compression_sidecar(nn::Module& model, const std::string& dir) {
  const std::string sidecar_path = (fs::path(dir) / kSidecar).string();
  if (!fs::exists(sidecar_path)) return false;
  const json sidecar = nn::parse_json_file(sidecar_path, "load_compressed");
  MASE_CHECK(sidecar.is_object() && sidecar.value("format", "") == kFormat &&
                 sidecar.value("version", 0) == 1 && sidecar.contains("layers"),
             IoError, "[load_compressed] ", sidecar_path,
             " is not a mase-compression sidecar of version 1 (expected {\"format\": \"", kFormat,
             "\", \"version\": 1, \"layers\": {...}})");
  // An empty layer list would load the model as plain fp32 while the folder claims otherwise.
  MASE_CHECK(sidecar["layers"].is_object() && !sidecar["layers"].empty(), IoError,
             "[load_compressed] ", sidecar_path, ": expected \"layers\" to name at least one "
             "compressed layer, got ", nn::brief(sidecar["layers"]),
             " (delete the file to load the model as plain fp32)");
  apply_compression_layers(model, sidecar["layers"], sidecar_path);
  return true;
}

void load_compressed_weights(nn::BertForSequenceClassification& model, const std::string& dir,
                             nn::LoadReport* report) {
  const std::string weights = (fs::path(dir) / "model.safetensors").string();
  if (!apply_compression_sidecar(model, dir))
    return nn::load_pretrained_weights(model, weights, report);
  try {
    model.load_state_dict(nn::load_safetensors(weights).tensors, /*strict=*/true);
  } catch (const ConfigError& e) {
    throw ConfigError(cat(e.what(), " (in ", weights, ")"));
  }
  if (report) *report = nn::LoadReport{};
}

std::shared_ptr<nn::BertForSequenceClassification> load_compressed(const std::string& dir) {
  MASE_CHECK(fs::is_directory(dir), IoError, "[load_compressed] ", dir, " is not a directory");
  auto model = std::make_shared<nn::BertForSequenceClassification>(
      nn::load_config((fs::path(dir) / "config.json").string()));
  load_compressed_weights(*model, dir);
  return model;
}

}  // namespace mase::quant
