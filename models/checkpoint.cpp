// models/checkpoint.cpp — see checkpoint.h.
#include "models/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/atomic_file.h"
#include "models/json_io.h"
#include "models/safetensors.h"

namespace mase::nn {
namespace fs = std::filesystem;
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Keys a BERT checkpoint may hold that a sequence classifier does not use.
bool ignorable(const std::string& key) {
  return starts_with(key, "cls.") || key == "bert.embeddings.position_ids" ||
         key == "bert.embeddings.token_type_ids";
}
// Keys a pretrained start may lack: the task head (and the pooler of MLM-only checkpoints).
bool may_be_fresh(const std::string& key) {
  return starts_with(key, "classifier.") || starts_with(key, "bert.pooler.");
}

// The sizes config.json claims, checked against the tensors model.safetensors holds, before
// the model is built: a config that says 10,000 layers or a 2^22 vocabulary next to a small
// checkpoint is refused without allocating anything.
void check_sizes_against(const BertConfig& c, const std::string& cfg, const std::string& weights) {
  int64_t layers = 0;
  for (const SafetensorsEntry& e : read_safetensors_header(weights).entries) {
    const std::string& k = e.name;
    if (ends_with(k, "embeddings.word_embeddings.weight"))
      MASE_CHECK((e.shape == Shape{c.vocab_size, c.hidden_size}), ConfigError, "[from_pretrained] ",
                 cfg, ": expected vocab_size x hidden_size = [", c.vocab_size, ", ", c.hidden_size,
                 "] to match ", k, " in ", weights, ", got ", e.shape);
    const size_t at = k.find("encoder.layer.");
    if (at != std::string::npos) {
      const size_t i = at + 14, end = k.find('.', i);
      if (end != std::string::npos && end > i && end - i < 6 &&
          k.find_first_not_of("0123456789", i) == end)
        layers = std::max<int64_t>(layers, std::stoll(k.substr(i, end - i)) + 1);
    }
  }
  MASE_CHECK(layers == 0 || layers == c.num_hidden_layers, ConfigError, "[from_pretrained] ", cfg,
             ": expected num_hidden_layers to match the ", layers, " encoder layers in ", weights,
             ", got ", c.num_hidden_layers);
}

// Every value of a floating-point CPU tensor is finite.
bool all_finite(const Tensor& t) {
  const Tensor c = t.contiguous();
  auto finite = [n = c.numel()]<class T>(const T* p) {
    return std::all_of(p, p + n, [](T v) { return std::isfinite(v); });
  };
  return c.dtype() == DType::f64 ? finite(c.data<double>()) : finite(c.data<float>());
}

}  // namespace

BertConfig load_config(const std::string& path) {
  MASE_CHECK(fs::is_regular_file(path), IoError, "[load_config] cannot open ", path,
             " (a model directory holds config.json and model.safetensors)");
  return BertConfig::from_json(parse_json_file(path, "load_config"), path);
}

void save_config(const BertConfig& config, const std::string& path) {
  config.validate();
  write_text_atomic(path, config.to_json().dump(2) + "\n");
}

void save_pretrained(const BertForSequenceClassification& model, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  MASE_CHECK(!ec, IoError, "[save_pretrained] cannot create directory ", dir, ": ", ec.message());
  // weights first: a directory whose config.json exists but whose weights were never written
  // would look loadable
  save_safetensors((fs::path(dir) / "model.safetensors").string(), model.state_dict());
  save_config(model.config(), (fs::path(dir) / "config.json").string());
}

std::shared_ptr<BertForSequenceClassification> from_pretrained(const std::string& dir,
                                                               LoadReport* report) {
  MASE_CHECK(fs::is_directory(dir), IoError, "[from_pretrained] ", dir, " is not a directory");
  const std::string weights = (fs::path(dir) / "model.safetensors").string();
  MASE_CHECK(fs::exists(weights), IoError, "[from_pretrained] ", dir,
             " has no model.safetensors (pytorch_model.bin is not read: convert it with "
             "transformers' save_pretrained(dir, safe_serialization=True))");
  const std::string cfg = (fs::path(dir) / "config.json").string();
  BertConfig config = load_config(cfg);
  check_sizes_against(config, cfg, weights);
  auto model = std::make_shared<BertForSequenceClassification>(config);
  load_pretrained_weights(*model, weights, report);
  return model;
}

void load_pretrained_weights(BertForSequenceClassification& model, const std::string& path,
                             LoadReport* report) {
  try {
    load_pretrained_weights(model, load_safetensors(path).tensors, report);
  } catch (const ConfigError& e) {
    throw ConfigError(cat(e.what(), " (in ", path, ")"));
  }
}

void load_pretrained_weights(BertForSequenceClassification& model,
                             std::map<std::string, Tensor> state, LoadReport* report) {
  LoadReport r;
  // 1. a bare BertModel checkpoint: its keys are the "bert." subtree
  bool has_prefix = false;
  for (const auto& [k, t] : state) has_prefix = has_prefix || starts_with(k, "bert.");
  if (!has_prefix) {
    std::map<std::string, Tensor> prefixed;
    for (auto& [k, t] : state) {
      const bool bert_part = starts_with(k, "embeddings.") || starts_with(k, "encoder.") ||
                             starts_with(k, "pooler.");
      prefixed[bert_part ? "bert." + k : k] = t;
    }
    state = std::move(prefixed);
  }
  // 2. TF-era LayerNorm names, ignorable keys
  std::map<std::string, Tensor> clean;
  for (auto& [k, t] : state) {
    std::string key = k;
    if (ends_with(key, "LayerNorm.gamma")) key = key.substr(0, key.size() - 5) + "weight";
    if (ends_with(key, "LayerNorm.beta")) key = key.substr(0, key.size() - 4) + "bias";
    if (key != k) r.renamed.push_back(k + " -> " + key);
    if (ignorable(key)) {
      r.ignored.push_back(key);
      continue;
    }
    MASE_CHECK(is_floating(t.dtype()), DTypeError, "[load_pretrained_weights] checkpoint key ", k,
               " is ", t.dtype(), ", expected a floating-point parameter");
    if (!all_finite(t)) r.non_finite.push_back(key);
    clean[key] = t;
  }
  if (!r.non_finite.empty())  // a diverged run's weights: every prediction would be NaN
    std::cerr << cat("[load_pretrained_weights] warning: ", r.non_finite.size(),
                     " tensor(s) hold NaN or inf values (first: ", r.non_finite.front(),
                     "); the model's outputs will not be numbers\n");
  // 3. a missing head keeps the model's fresh one (only when the checkpoint lacks it entirely)
  for (const auto& [name, t] : model.state_dict())
    if (!clean.count(name) && may_be_fresh(name)) {
      clean[name] = t.detach().clone();  // copied onto itself by load_state_dict: keeps the fresh init
      r.initialized.push_back(name);
    }
  // 4. everything else must match exactly (one error listing every problem)
  model.load_state_dict(clean, /*strict=*/true);
  if (report) *report = std::move(r);
}

}  // namespace mase::nn
