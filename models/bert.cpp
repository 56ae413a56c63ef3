// models/bert.cpp — BERT's embeddings, pooler, BertModel, the sequence classifier, HF's
// weight init and the additive attention mask (see bert.h for the tree and the shapes).
//
//   h0     = LayerNorm(word[ids] + position[t] + token_type[tt])      BertEmbeddings
//   h      = encoder(h0, mask)                                        models/bert_encoder.cpp
//   pooled = tanh(Wp · h[:, 0] + bp)          ("cls")                 BertPooler
//          = tanh(Wp · Σ_t m_t h[:, t] / Σ_t m_t + bp)   ("mean", ours)
//   logits = Wc · dropout(pooled) + bc;  loss = mean cross-entropy(logits, labels)
#include "models/bert.h"

#include <functional>
#include <limits>

#include "models/init.h"

namespace mase::nn {
namespace {

void check_ids(const char* op, const Tensor& t, const char* what, const Shape& want) {
  MASE_CHECK(t.dtype() == DType::i32, DTypeError, "[", op, "] expected ", what, " to be i32, got ",
             t.dtype());
  MASE_CHECK(t.shape() == want, ShapeError, "[", op, "] expected ", what, " of shape ", want,
             " (like input_ids), got ", t.shape());
}

// A 0/1 mask of any dtype as `dtype`: the recorded op to_dtype, so a traced graph converts
// the mask it is given instead of freezing the example's in.
Tensor as_float(const Tensor& mask, DType dtype) {
  return mask.dtype() == dtype ? mask : to_dtype(mask, dtype);
}

}  // namespace

// ---- embeddings ---------------------------------------------------------------------------

BertEmbeddings::BertEmbeddings(const BertConfig& c) : max_positions(c.max_position_embeddings) {
  register_module("word_embeddings", word_embeddings,
                  ModulePtr(std::make_shared<Embedding>(c.vocab_size, c.hidden_size)));
  register_module("position_embeddings", position_embeddings,
                  ModulePtr(std::make_shared<Embedding>(c.max_position_embeddings, c.hidden_size)));
  register_module("token_type_embeddings", token_type_embeddings,
                  ModulePtr(std::make_shared<Embedding>(c.type_vocab_size, c.hidden_size)));
  register_module("LayerNorm", LayerNorm,
                  ModulePtr(std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps)));
  register_module("dropout", dropout, ModulePtr(std::make_shared<Dropout>(c.hidden_dropout_prob)));
}

Tensor BertEmbeddings::forward(const Tensor& input_ids, const Tensor& token_type_ids) {
  // input_ids is (B, T) i32
  MASE_CHECK(input_ids.defined() && input_ids.ndim() == 2, ShapeError,
             "[BertEmbeddings] expected input_ids (B, T), got ",
             input_ids.defined() ? to_string(input_ids.shape()) : "an undefined tensor");
  MASE_CHECK(input_ids.dtype() == DType::i32, DTypeError,
             "[BertEmbeddings] expected input_ids to be i32, got ", input_ids.dtype());
  const int64_t T = input_ids.size(1);
  MASE_CHECK(T <= max_positions, ShapeError, "[BertEmbeddings] expected at most ", max_positions,
             " tokens (max_position_embeddings), got input_ids ", input_ids.shape(),
             " (truncate the inputs)");
  // Tensors built here are made by recorded ops (ones_like, zeros_like, arange_like), so a
  // traced graph builds them on each run instead of keeping the example batch's.
  Tensor tt = token_type_ids;
  if (tt.defined()) check_ids("BertEmbeddings", tt, "token_type_ids", input_ids.shape());
  else tt = zeros_like(input_ids, DType::i32);  // (B, T): one segment
  Tensor position_ids = arange_like(input_ids, 1, DType::i32);  // (T): 0, 1, ..., T-1
  Tensor x = (*word_embeddings)(input_ids) + (*token_type_embeddings)(tt);  // (B, T, C)
  x = x + (*position_embeddings)(position_ids);  // (T, C) broadcast over the batch
  return (*dropout)((*LayerNorm)(x));
}

// ---- pooler -------------------------------------------------------------------------------

BertPooler::BertPooler(const BertConfig& c) {
  register_module("dense", dense, ModulePtr(std::make_shared<Linear>(c.hidden_size, c.hidden_size)));
  register_module("activation", activation, ModulePtr(std::make_shared<Tanh>()));
}

Tensor BertPooler::forward(const Tensor& x) { return (*activation)((*dense)(x)); }

// ---- the attention mask -------------------------------------------------------------------

Tensor extended_attention_mask(const Tensor& attention_mask, DType dtype) {
  // attention_mask is (B, T): 1 keeps a token, 0 hides it from every query
  MASE_CHECK(attention_mask.ndim() == 2, ShapeError,
             "[extended_attention_mask] expected attention_mask (B, T), got ", attention_mask.shape());
  const double lowest = dtype == DType::f64 ? std::numeric_limits<double>::lowest()
                                            : static_cast<double>(std::numeric_limits<float>::lowest());
  NoGradGuard no_grad;
  Tensor m = as_float(attention_mask, dtype);  // i32 / u8 / f32 -> the model's float type
  Tensor additive = rsub(1.0, m) * lowest;      // (1 − m) · lowest: 0 or finfo.min, as HF
  return view(additive, {attention_mask.size(0), 1, 1, attention_mask.size(1)});  // (B, 1, 1, T)
}

// ---- BertModel ------------------------------------------------------------------------------

BertModel::BertModel(const BertConfig& c) : pooling(c.pooling) {
  register_module("embeddings", embeddings, std::make_shared<BertEmbeddings>(c));
  register_module("encoder", encoder, std::make_shared<BertEncoder>(c));
  register_module("pooler", pooler, std::make_shared<BertPooler>(c));
}

BertModelOutput BertModel::forward(const Tensor& input_ids, const Tensor& attention_mask,
                                   const Tensor& token_type_ids) {
  Tensor h = embeddings->forward(input_ids, token_type_ids);  // (B, T, C)
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  // No mask given: every token is real. Built here (not skipped) so that the traced graph and
  // the numbers are the same with or without an explicit all-ones mask.
  Tensor am = attention_mask.defined() ? attention_mask : ones_like(input_ids, DType::i32);
  MASE_CHECK(am.shape() == input_ids.shape(), ShapeError, "[BertModel] expected attention_mask of shape ",
             input_ids.shape(), " (like input_ids), got ", am.shape());
  Tensor mask = extended_attention_mask(am, h.dtype());  // (B, 1, 1, T)
  h = encoder->forward(h, mask);
  Tensor first;  // (B, C): what the pooler sees
  if (pooling == "mean") {
    // mean over real tokens: Σ_t m_t h_t / Σ_t m_t   (m (B, T, 1) broadcasts over C)
    // reshape, not view: a mask of h's dtype is used as given, and may be a strided slice
    Tensor m = reshape(as_float(am, h.dtype()), {B, T, 1});
    first = sum(h * m, {1}) / sum(m, {1});  // (B, C) / (B, 1)
  } else {
    first = select(h, 1, 0);  // [CLS]: the first token
  }
  return {h, (*pooler)(first)};
}

// ---- the classifier -----------------------------------------------------------------------

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& c) : config_(c) {
  config_.validate();
  register_module("bert", bert, std::make_shared<BertModel>(config_));
  register_module("dropout", dropout, ModulePtr(std::make_shared<Dropout>(config_.classifier_dropout_prob())));
  register_module("classifier", classifier,
                  ModulePtr(std::make_shared<Linear>(config_.hidden_size, config_.num_labels)));
  init_bert_weights(*this, config_.initializer_range);
}

std::string BertForSequenceClassification::extra_repr() const {
  return cat("layers=", config_.num_hidden_layers, ", hidden=", config_.hidden_size,
             ", heads=", config_.num_attention_heads, ", intermediate=", config_.intermediate_size,
             ", vocab=", config_.vocab_size, ", pooling=", config_.pooling);
}

SequenceClassifierOutput BertForSequenceClassification::forward(const Tensor& input_ids,
                                                                const Tensor& attention_mask,
                                                                const Tensor& token_type_ids,
                                                                const Tensor& labels) {
  BertModelOutput out = bert->forward(input_ids, attention_mask, token_type_ids);
  Tensor logits = (*classifier)((*dropout)(out.pooler_output));  // (B, num_labels)
  Tensor loss;
  if (labels.defined()) {
    check_ids("BertForSequenceClassification", labels, "labels", {input_ids.size(0)});
    loss = cross_entropy(logits, labels);
  }
  return {logits, loss};
}

Tensor BertForSequenceClassification::forward(const Tensor& input_ids) {
  return forward(input_ids, Tensor()).logits;
}

// ---- init -----------------------------------------------------------------------------------

void init_bert_weights(BertForSequenceClassification& model, double std) {
  NoGradGuard no_grad;
  // walk the tree by children (named_modules() needs shared_from_this, unavailable while the
  // constructor that calls this is running)
  std::function<void(Module&)> init = [&](Module& m) {
    if (auto* lin = dynamic_cast<Linear*>(&m)) {
      normal_(lin->weight, 0.0, std);
      if (lin->bias.defined()) fill_(lin->bias, 0.0);
    } else if (auto* emb = dynamic_cast<Embedding*>(&m)) {
      normal_(emb->weight, 0.0, std);
    } else if (auto* ln = dynamic_cast<LayerNorm*>(&m)) {
      fill_(ln->weight, 1.0);
      fill_(ln->bias, 0.0);
    }
    for (auto& [name, child] : m.named_children()) init(*child);
  };
  init(model);
  // nn.Embedding(padding_idx=pad_token_id): the [PAD] row starts at zero
  if (auto* word = dynamic_cast<Embedding*>(model.bert->embeddings->word_embeddings.get())) {
    const int64_t pad = model.config().pad_token_id;
    fill_(select(word->weight.detach(), 0, pad), 0.0);
  }
}

}  // namespace mase::nn
