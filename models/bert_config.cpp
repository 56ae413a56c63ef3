// models/bert_config.cpp — BertConfig: validation, config.json in HF's form, presets.
#include "models/bert_config.h"

#include <cstdint>
#include <map>

#include "models/json_io.h"
#include "runtime/error.h"

namespace mase::nn {
namespace {

using nlohmann::json;

// Field readers: absent -> keep the default; present with the wrong type -> ConfigError.
void read_int(const json& j, const char* key, int64_t& out, const std::string& src) {
  if (!j.contains(key)) return;
  // an unsigned value above INT64_MAX (18446744073709551615) would read as a negative one
  MASE_CHECK(j[key].is_number_integer() &&
                 !(j[key].is_number_unsigned() && j[key].get<uint64_t>() > INT64_MAX),
             ConfigError, "[BertConfig] ", src, ": expected ", key,
             " to be an integer, got ", brief(j[key]));
  out = j[key].get<int64_t>();
}
void read_double(const json& j, const char* key, double& out, const std::string& src) {
  if (!j.contains(key)) return;
  MASE_CHECK(j[key].is_number(), ConfigError, "[BertConfig] ", src, ": expected ", key,
             " to be a number, got ", brief(j[key]));
  out = j[key].get<double>();
}
void read_string(const json& j, const char* key, std::string& out, const std::string& src) {
  if (!j.contains(key)) return;
  MASE_CHECK(j[key].is_string(), ConfigError, "[BertConfig] ", src, ": expected ", key,
             " to be a string, got ", brief(j[key]));
  out = j[key].get<std::string>();
}
// A boolean HF option whose only supported value is false (is_decoder, add_cross_attention).
void require_false(const json& j, const char* key, const std::string& src) {
  if (!j.contains(key) || j[key].is_null()) return;
  MASE_CHECK(j[key].is_boolean() && !j[key].get<bool>(), ConfigError, "[BertConfig] ", src,
             ": unsupported ", key, " = ", brief(j[key]),
             " (only encoder-only BERT is implemented; expected false)");
}

struct Preset {
  int64_t layers, hidden, heads, intermediate;
};
const std::map<std::string, Preset>& presets() {
  // Turc et al. 2019 ("Well-read students learn better"), google-research/bert's compact models.
  static const std::map<std::string, Preset> p = {
      {"bert-tiny", {2, 128, 2, 512}},    {"bert-mini", {4, 256, 4, 1024}},
      {"bert-small", {4, 512, 8, 2048}},  {"bert-medium", {8, 512, 8, 2048}},
      {"bert-base", {12, 768, 12, 3072}},
  };
  return p;
}

}  // namespace

void BertConfig::validate() const {
  auto positive = [](const char* name, int64_t v) {
    MASE_CHECK(v > 0, ConfigError, "[BertConfig] expected ", name, " > 0, got ", v);
  };
  // Upper bounds before anything is allocated: a hostile or mistyped config.json
  // (num_hidden_layers 1e9, vocab_size 2^40) is refused here instead of exhausting memory.
  auto at_most = [](const char* name, int64_t v, int64_t max) {
    MASE_CHECK(v <= max, ConfigError, "[BertConfig] expected ", name, " <= ", max, ", got ", v,
               " (larger than any BERT; a corrupt config?)");
  };
  at_most("vocab_size", vocab_size, kMaxVocab);
  at_most("hidden_size", hidden_size, 16384);
  at_most("num_hidden_layers", num_hidden_layers, kMaxLayers);
  at_most("num_attention_heads", num_attention_heads, 1024);
  at_most("intermediate_size", intermediate_size, 65536);
  at_most("max_position_embeddings", max_position_embeddings, 65536);
  at_most("type_vocab_size", type_vocab_size, 1024);
  at_most("num_labels", num_labels, 1'000'000);
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("type_vocab_size", type_vocab_size);
  const int64_t H = hidden_size, params = (vocab_size + max_position_embeddings + type_vocab_size) * H +
                                          num_hidden_layers * (4 * H * H + 2 * H * intermediate_size);
  MASE_CHECK(params <= kMaxParameters, ConfigError, "[BertConfig] expected at most ", kMaxParameters,
             " parameters, got about ", params, " (vocab_size ", vocab_size, ", hidden_size ", H,
             ", num_hidden_layers ", num_hidden_layers, ", intermediate_size ", intermediate_size,
             "; a corrupt config?)");
  MASE_CHECK(hidden_size % num_attention_heads == 0, ConfigError, "[BertConfig] hidden_size ",
             hidden_size, " is not divisible by num_attention_heads ", num_attention_heads,
             " (each head gets hidden_size / num_attention_heads dims)");
  MASE_CHECK(num_labels >= 2, ConfigError, "[BertConfig] expected num_labels >= 2, got ", num_labels,
             " (regression heads are not implemented)");
  MASE_CHECK(pad_token_id >= 0 && pad_token_id < vocab_size, ConfigError,
             "[BertConfig] pad_token_id ", pad_token_id, " is outside the vocabulary (vocab_size ",
             vocab_size, ")");
  auto prob = [](const char* name, double p) {
    MASE_CHECK(p >= 0.0 && p < 1.0, ConfigError, "[BertConfig] expected ", name, " in [0, 1), got ", p);
  };
  prob("hidden_dropout_prob", hidden_dropout_prob);
  prob("attention_probs_dropout_prob", attention_probs_dropout_prob);
  prob("classifier_dropout", classifier_dropout_prob());
  MASE_CHECK(layer_norm_eps > 0.0, ConfigError, "[BertConfig] expected layer_norm_eps > 0, got ",
             layer_norm_eps);
  MASE_CHECK(initializer_range >= 0.0, ConfigError,
             "[BertConfig] expected initializer_range >= 0, got ", initializer_range);
  MASE_CHECK(hidden_act == "gelu", ConfigError, "[BertConfig] unsupported hidden_act \"", hidden_act,
             "\" (only \"gelu\", the exact erf GELU, is implemented)");
  MASE_CHECK(position_embedding_type == "absolute", ConfigError,
             "[BertConfig] unsupported position_embedding_type \"", position_embedding_type,
             "\" (only \"absolute\" is implemented)");
  MASE_CHECK(pooling == "cls" || pooling == "mean", ConfigError,
             "[BertConfig] expected pooling \"cls\" or \"mean\", got \"", pooling, "\"");
}

nlohmann::json BertConfig::to_json() const {
  json j;
  j["architectures"] = json::array({"BertForSequenceClassification"});
  j["model_type"] = "bert";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["initializer_range"] = initializer_range;
  j["layer_norm_eps"] = layer_norm_eps;
  j["position_embedding_type"] = position_embedding_type;
  j["pad_token_id"] = pad_token_id;
  j["classifier_dropout"] = classifier_dropout ? json(*classifier_dropout) : json(nullptr);
  // HF derives num_labels from id2label; label2id is its inverse.
  json id2label = json::object(), label2id = json::object();
  for (int64_t i = 0; i < num_labels; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  j["id2label"] = id2label;
  j["label2id"] = label2id;
  j["pooling"] = pooling;  // ours: HF keeps it as an unused attribute
  if (pooling != "cls")    // say it where a reader of the file looks
    j["pooling_note"] = "mean pooling is mase-cpp's: transformers' BertForSequenceClassification "
                        "ignores \"pooling\" and pools [CLS], so it predicts differently from this model";
  return j;
}

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& src) {
  MASE_CHECK(j.is_object(), ConfigError, "[BertConfig] ", src, ": expected a JSON object, got ",
             j.type_name());
  BertConfig c;
  if (j.contains("model_type")) {
    std::string mt;
    read_string(j, "model_type", mt, src);
    MASE_CHECK(mt == "bert", ConfigError, "[BertConfig] ", src, ": unsupported model_type \"", mt,
               "\" (expected \"bert\")");
  }
  read_int(j, "vocab_size", c.vocab_size, src);
  read_int(j, "hidden_size", c.hidden_size, src);
  read_int(j, "num_hidden_layers", c.num_hidden_layers, src);
  read_int(j, "num_attention_heads", c.num_attention_heads, src);
  read_int(j, "intermediate_size", c.intermediate_size, src);
  read_string(j, "hidden_act", c.hidden_act, src);
  read_double(j, "hidden_dropout_prob", c.hidden_dropout_prob, src);
  read_double(j, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, src);
  read_int(j, "max_position_embeddings", c.max_position_embeddings, src);
  read_int(j, "type_vocab_size", c.type_vocab_size, src);
  read_double(j, "initializer_range", c.initializer_range, src);
  read_double(j, "layer_norm_eps", c.layer_norm_eps, src);
  read_string(j, "position_embedding_type", c.position_embedding_type, src);
  if (j.contains("pad_token_id") && !j["pad_token_id"].is_null())
    read_int(j, "pad_token_id", c.pad_token_id, src);
  if (j.contains("classifier_dropout") && !j["classifier_dropout"].is_null()) {
    double p = 0;
    read_double(j, "classifier_dropout", p, src);
    c.classifier_dropout = p;
  }
  // num_labels: HF stores id2label (num_labels is derived from it); accept either.
  if (j.contains("id2label") && !j["id2label"].is_null()) {
    MASE_CHECK(j["id2label"].is_object(), ConfigError, "[BertConfig] ", src,
               ": expected id2label to be an object, got ", brief(j["id2label"]));
    c.num_labels = static_cast<int64_t>(j["id2label"].size());
  } else {
    read_int(j, "num_labels", c.num_labels, src);
  }
  read_string(j, "pooling", c.pooling, src);
  require_false(j, "is_decoder", src);
  require_false(j, "add_cross_attention", src);
  if (j.contains("problem_type") && !j["problem_type"].is_null()) {
    std::string pt;
    read_string(j, "problem_type", pt, src);
    MASE_CHECK(pt == "single_label_classification", ConfigError, "[BertConfig] ", src,
               ": unsupported problem_type \"", pt, "\" (only single_label_classification)");
  }
  try {
    c.validate();
  } catch (const ConfigError& e) {
    // "[BertConfig] x" -> "[BertConfig] config.json: x" so the user knows which file
    std::string m = e.what();
    const std::string tag = "[BertConfig] ";
    throw ConfigError(m.rfind(tag, 0) == 0 ? tag + src + ": " + m.substr(tag.size()) : m);
  }
  return c;
}

BertConfig BertConfig::preset(const std::string& name, int64_t vocab_size) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(cat("[BertConfig] unknown model \"", name, "\" (known: ", known, ")"));
  }
  BertConfig c;
  c.vocab_size = vocab_size;
  c.num_hidden_layers = it->second.layers;
  c.hidden_size = it->second.hidden;
  c.num_attention_heads = it->second.heads;
  c.intermediate_size = it->second.intermediate;
  c.validate();
  return c;
}

std::vector<std::string> BertConfig::preset_names() {
  return {"bert-tiny", "bert-mini", "bert-small", "bert-medium", "bert-base"};
}

}  // namespace mase::nn
