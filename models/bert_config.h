// models/bert_config.h — BertConfig: the hyper-parameters of a BERT sequence classifier, in
// HuggingFace's BertConfig form (same field names, same config.json), plus named presets.
//
// The fields mean exactly what they mean in transformers.BertConfig, so a config.json written
// here loads with BertForSequenceClassification.from_pretrained and one written by HF loads
// here. What this runtime does not implement is refused with a ConfigError naming the field
// (position_embedding_type other than "absolute", hidden_act other than exact "gelu", decoder
// or cross-attention flags, ...) instead of silently computing a different model.
//
// One addition of ours: `pooling`. "cls" (HF's BertPooler) feeds the hidden state of the first
// token ([CLS]) to the pooler; "mean" feeds the mean of the hidden states over the real
// (attention_mask = 1) tokens instead. The pooler's dense + tanh and every parameter stay the
// same, so checkpoints are interchangeable; but HF ignores the "pooling" key, so a "mean" model
// loaded into HF computes CLS pooling (different logits) — keep "cls" for HF round trips.
//
// Read next: models/bert.h (the modules built from this), models/checkpoint.h (config.json).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mase::nn {

// Bounds BertConfig::validate enforces (BERT-large has 24 layers and a 30,522 vocab; the
// largest multilingual vocabularies about 250,000), and the most parameters a config may imply.
constexpr int64_t kMaxLayers = 256;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxParameters = int64_t{1} << 31;  // 8 GiB of f32 weights

struct BertConfig {
  int64_t vocab_size = 30522;  // uncased WordPiece; set from the tokenizer in practice
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";  // exact GELU: 0.5·x·(1 + erf(x/√2)); nothing else
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;  // std of the N(0, σ) init of Linear and Embedding weights
  double layer_norm_eps = 1e-12;
  std::string position_embedding_type = "absolute";  // the only one implemented
  int64_t num_labels = 2;
  int64_t pad_token_id = 0;
  std::optional<double> classifier_dropout;  // null: use hidden_dropout_prob (as HF)
  std::string pooling = "cls";                // "cls" (HF) or "mean" (ours; see above)

  int64_t head_size() const { return hidden_size / num_attention_heads; }
  // The dropout before the classifier: classifier_dropout if set, else hidden_dropout_prob.
  double classifier_dropout_prob() const { return classifier_dropout.value_or(hidden_dropout_prob); }

  // Throws ConfigError naming the first bad field, e.g.
  // "[BertConfig] hidden_size 100 is not divisible by num_attention_heads 3 (pick ...)".
  void validate() const;

  // HF's config.json (model_type "bert", architectures [BertForSequenceClassification]).
  nlohmann::json to_json() const;
  // From an HF (or our) config.json. Missing fields take HF's defaults; fields this runtime
  // cannot honour throw ConfigError naming the field and `source` (the file, for messages).
  static BertConfig from_json(const nlohmann::json& j, const std::string& source = "config.json");

  // bert-tiny (L2 H128 A2 I512), bert-mini (L4 H256 A4 I1024), bert-small (L4 H512 A8 I2048),
  // bert-medium (L8 H512 A8 I2048), bert-base (L12 H768 A12 I3072); 512 positions, 2 token
  // types. Unknown name: ConfigError listing the known ones.
  static BertConfig preset(const std::string& name, int64_t vocab_size = 30522);
  static std::vector<std::string> preset_names();
};

}  // namespace mase::nn
