// models/bert.h — BERT for sequence classification, with HuggingFace's module tree and names.
//
// Devlin et al. 2019, "BERT: Pre-training of deep bidirectional transformers". The structure
// mirrors transformers' modeling_bert.py, so every parameter path is an HF checkpoint key:
//
//   BertForSequenceClassification
//   ├─ bert: BertModel
//   │  ├─ embeddings: BertEmbeddings   word_embeddings, position_embeddings,
//   │  │                               token_type_embeddings, LayerNorm, dropout
//   │  ├─ encoder: BertEncoder
//   │  │  └─ layer: ModuleList of BertLayer (post-LN)
//   │  │     ├─ attention: BertAttention
//   │  │     │  ├─ self: BertSelfAttention   query, key, value, dropout   (→ sdpa)
//   │  │     │  └─ output: BertSelfOutput    dense, LayerNorm, dropout
//   │  │     ├─ intermediate: BertIntermediate  dense, intermediate_act_fn (GELU)
//   │  │     └─ output: BertOutput         dense, LayerNorm, dropout
//   │  └─ pooler: BertPooler               dense, activation (Tanh)
//   ├─ dropout
//   └─ classifier: Linear(hidden, num_labels)
//
// e.g. bert.encoder.layer.0.attention.self.query.weight. Leaf children (Linear, Embedding,
// LayerNorm, Dropout, activations) are held as ModulePtr and called through operator(), so
// passes (quantize, LoRA, dropout removal) can replace them and tracing sees each call.
//
// Shapes (llm.c letters): B batch, T tokens, C hidden_size, NH heads, HS = C / NH.
// Read next: models/bert_encoder.cpp (attention and layers), models/bert.cpp (embeddings,
// pooler, the classifier), models/checkpoint.h (save / load).
#pragma once
#include "models/bert_config.h"
#include "models/layers.h"

namespace mase::nn {

class BertEmbeddings : public Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  std::string type_name() const override { return "BertEmbeddings"; }
  using Module::forward;
  // input_ids (B, T) i32, token_type_ids (B, T) i32 or undefined (all 0) -> (B, T, C):
  //   LayerNorm(word[ids] + position[0..T) + token_type[tt]), then dropout.
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids);
  ModulePtr word_embeddings, position_embeddings, token_type_embeddings, LayerNorm, dropout;
  int64_t max_positions;
};

class BertSelfAttention : public Module {
 public:
  explicit BertSelfAttention(const BertConfig& c);
  std::string type_name() const override { return "BertSelfAttention"; }
  using Module::forward;
  // x (B, T, C), mask additive (B, 1, 1, T) or undefined -> context (B, T, C), heads merged.
  Tensor forward(const Tensor& x, const Tensor& mask);
  ModulePtr query, key, value;
  // Applied to the attention probabilities inside sdpa: its p is read at each call, so
  // replacing it with Identity (p = 0) switches attention dropout off.
  ModulePtr dropout;
  int64_t num_heads, head_size;
};

// dense -> dropout -> + residual -> LayerNorm (the "Add & Norm" after attention or the FFN)
class BertSelfOutput : public Module {
 public:
  BertSelfOutput(const BertConfig& c, int64_t in_features);
  std::string type_name() const override { return "BertSelfOutput"; }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& residual);  // x (B, T, in) -> (B, T, C)
  // The fused pass alone, on the dense's product y (B, T, C) and bias b: what forward runs
  // after split_dense, and BertLayer after its FFN in chunks
  Tensor add_norm(const Tensor& y, const Tensor& b, const Tensor& residual) const;
  ModulePtr dense, LayerNorm, dropout;
  bool fused = false;  // run dropout_add_layer_norm: set by nn::fuse_kernels (models/fusion.h)
  void child_replaced(const std::string& name) override;  // clears `fused`
};

class BertAttention : public Module {
 public:
  explicit BertAttention(const BertConfig& c);
  std::string type_name() const override { return "BertAttention"; }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);  // (B, T, C) -> (B, T, C)
  std::shared_ptr<BertSelfAttention> self;
  std::shared_ptr<BertSelfOutput> output;
};

class BertIntermediate : public Module {
 public:
  explicit BertIntermediate(const BertConfig& c);
  std::string type_name() const override { return "BertIntermediate"; }
  Tensor forward(const Tensor& x) override;  // (B, T, C) -> (B, T, I): gelu(dense(x))
  ModulePtr dense, intermediate_act_fn;
  bool fused = false;  // run bias_gelu: set by nn::fuse_kernels (models/fusion.h)
  void child_replaced(const std::string& name) override;  // clears `fused`
};

// HF's name for the FFN's "Add & Norm": same computation as BertSelfOutput (I -> C).
class BertOutput : public BertSelfOutput {
 public:
  explicit BertOutput(const BertConfig& c) : BertSelfOutput(c, c.intermediate_size) {}
  std::string type_name() const override { return "BertOutput"; }
};

class BertLayer : public Module {
 public:
  explicit BertLayer(const BertConfig& c);
  std::string type_name() const override { return "BertLayer"; }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);  // (B, T, C) -> (B, T, C)
  std::shared_ptr<BertAttention> attention;
  std::shared_ptr<BertIntermediate> intermediate;
  std::shared_ptr<BertOutput> output;
  // Under NoGradGuard, run the FFN with nn::ffn_in_chunks (models/fusion.h): set by
  // nn::fuse_kernels; checked again at every call (a replaced child unfuses its block)
  bool ffn_chunks = false;
};

class BertEncoder : public Module {
 public:
  explicit BertEncoder(const BertConfig& c);
  std::string type_name() const override { return "BertEncoder"; }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<ModuleList> layer;  // of BertLayer
};

// activation(dense(x)) on the pooled token: x (B, C) -> (B, C). BertModel picks x: the first
// token's hidden state ("cls", HF) or the masked mean over real tokens ("mean"; a sequence
// with no real token at all has no mean: NaN).
class BertPooler : public Module {
 public:
  explicit BertPooler(const BertConfig& c);
  std::string type_name() const override { return "BertPooler"; }
  Tensor forward(const Tensor& x) override;
  ModulePtr dense, activation;
};

struct BertModelOutput {
  Tensor last_hidden_state;  // (B, T, C)
  Tensor pooler_output;      // (B, C)
};

class BertModel : public Module {
 public:
  explicit BertModel(const BertConfig& c);
  std::string type_name() const override { return "BertModel"; }
  using Module::forward;
  // input_ids (B, T) i32; attention_mask (B, T) of any dtype, 1 = real token, 0 = padding, or
  // undefined (all ones, built here from input_ids' shape); token_type_ids (B, T) i32 or
  // undefined (all 0).
  BertModelOutput forward(const Tensor& input_ids, const Tensor& attention_mask,
                          const Tensor& token_type_ids);
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<BertEncoder> encoder;
  std::shared_ptr<BertPooler> pooler;
  std::string pooling;  // "cls" or "mean"
};

struct SequenceClassifierOutput {
  Tensor logits;  // (B, num_labels)
  Tensor loss;    // () mean cross-entropy; undefined when no labels were given
};

class BertForSequenceClassification : public Module {
 public:
  // Builds the tree and initialises it as HF's _init_weights (see init_bert_weights).
  explicit BertForSequenceClassification(const BertConfig& c);
  std::string type_name() const override { return "BertForSequenceClassification"; }
  std::string extra_repr() const override;
  // The full call. labels (B) i32 in [0, num_labels) or undefined.
  SequenceClassifierOutput forward(const Tensor& input_ids, const Tensor& attention_mask,
                                   const Tensor& token_type_ids = Tensor(),
                                   const Tensor& labels = Tensor());
  // Unary form for tracing and quick use: logits of input_ids with no padding.
  Tensor forward(const Tensor& input_ids) override;
  const BertConfig& config() const { return config_; }

  std::shared_ptr<BertModel> bert;
  ModulePtr dropout, classifier;

 private:
  BertConfig config_;
};

// HF's BertPreTrainedModel._init_weights over every module of `m`: Linear and Embedding
// weights ~ N(0, std²), Linear biases 0, LayerNorm weight 1 and bias 0; then the word
// embedding row of pad_token_id is zeroed (nn.Embedding(padding_idx=pad_token_id)).
// Draws from the default generator: seed with manual_seed for a reproducible model.
void init_bert_weights(BertForSequenceClassification& m, double std);

// The additive attention mask of HF's eager attention, (B, T) 0/1 -> (B, 1, 1, T):
//   (1 − mask) · lowest(dtype)   (0 on real tokens, finfo(dtype).min on padding)
// broadcast over heads and query positions. No autograd (the mask is data).
Tensor extended_attention_mask(const Tensor& attention_mask, DType dtype);

}  // namespace mase::nn
