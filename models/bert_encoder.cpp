// models/bert_encoder.cpp — the transformer encoder of BERT: self-attention, the "Add & Norm"
// blocks, the feed-forward network, the layer and the stack (see bert.h for the tree).
//
// One post-LN layer (Vaswani et al. 2017; BERT keeps the original post-LN order):
//   a = LayerNorm(x + dropout(Wo · MHA(x, mask)))       attention + BertSelfOutput
//   y = LayerNorm(a + dropout(W2 · gelu(W1 · a)))       BertIntermediate + BertOutput
// MHA: q, k, v = Wq·x, Wk·x, Wv·x split into NH heads of HS dims; each head attends with
// sdpa (autograd/ops/sdpa.cpp): softmax(q·kᵀ/√HS + mask)·v; the heads are concatenated.
//
// Fused forms (models/fusion.h): once the fusion pass has set a block's `fused` flag, the FFN's
// first half is bias_gelu(x·W1ᵀ, b1) and each Add & Norm is dropout_add_layer_norm(x·Wᵀ, b,
// residual, ...) — a GEMM without bias, then one pass (autograd/ops/gelu.cpp, layer_norm.cpp);
// for inference under --precision bf16 on AMX the FFN's GELU is applied in the GEMM's own store
// (linear_gelu, autograd/ops/matmul.cpp), the same bits in one pass fewer.
// The same maths as the module calls below them, in fewer passes over the activations.
// Read next: models/bert.cpp (embeddings, pooler, classifier).
#include "models/bert.h"
#include "models/fusion.h"

#include "autograd/engine.h"

namespace mase::nn {

BertSelfAttention::BertSelfAttention(const BertConfig& c)
    : num_heads(c.num_attention_heads), head_size(c.head_size()) {
  register_module("query", query, ModulePtr(std::make_shared<Linear>(c.hidden_size, c.hidden_size)));
  register_module("key", key, ModulePtr(std::make_shared<Linear>(c.hidden_size, c.hidden_size)));
  register_module("value", value, ModulePtr(std::make_shared<Linear>(c.hidden_size, c.hidden_size)));
  register_module("dropout", dropout, ModulePtr(std::make_shared<Dropout>(c.attention_probs_dropout_prob)));
}

Tensor BertSelfAttention::forward(const Tensor& x, const Tensor& mask) {
  // x is (B, T, C)
  MASE_CHECK(x.ndim() == 3, ShapeError, "[BertSelfAttention] expected x (B, T, C), got ", x.shape());
  const int64_t B = x.size(0), T = x.size(1), C = num_heads * head_size;
  // (B, T, C) -> (B, T, NH, HS) -> (B, NH, T, HS): a strided view, no copy
  auto split_heads = [&](const Tensor& t) {
    return transpose(view(t, {B, T, num_heads, head_size}), 1, 2);
  };
  Tensor q = split_heads((*query)(x)), k = split_heads((*key)(x)), v = split_heads((*value)(x));
  // The dropout child decides the attention dropout: a Dropout gives its p, anything else
  // (Identity after a dropout-removal pass) means none.
  auto* drop = dynamic_cast<Dropout*>(dropout.get());
  const double p = drop ? drop->p : 0.0;
  const bool training = drop ? drop->is_training() : false;
  Tensor ctx = sdpa(q, k, v, mask, p, training);  // (B, NH, T, HS)
  // merge heads: (B, NH, T, HS) -> (B, T, NH, HS) -> (B, T, C); sdpa's fused kernels (CPU, and
  // CUDA for the head sizes it has) write (B, T, NH, HS), so this is a view; the reference
  // path (other CUDA head sizes, a mask that needs a gradient) pays a packing copy
  return reshape(transpose(ctx, 1, 2), {B, T, C});
}

BertSelfOutput::BertSelfOutput(const BertConfig& c, int64_t in_features) {
  register_module("dense", dense, ModulePtr(std::make_shared<Linear>(in_features, c.hidden_size)));
  register_module("LayerNorm", LayerNorm, ModulePtr(std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps)));
  register_module("dropout", dropout, ModulePtr(std::make_shared<Dropout>(c.hidden_dropout_prob)));
}

void BertSelfOutput::child_replaced(const std::string&) { fused = false; }

Tensor BertSelfOutput::forward(const Tensor& x, const Tensor& residual) {
  // x is (B, T, in), residual is (B, T, C)
  if (fused) {  // the fusion pass checked: a plain Linear (or SplitBias), LayerNorm, Dropout or Identity
    const auto [y, b] = split_dense(*dense, x);  // x·Wᵀ and b, added in the fused pass
    return add_norm(y, b, residual);
  }
  return (*LayerNorm)((*dropout)((*dense)(x)) + residual);
}

Tensor BertSelfOutput::add_norm(const Tensor& y, const Tensor& b, const Tensor& residual) const {
  const auto& ln = static_cast<const nn::LayerNorm&>(*LayerNorm);
  const auto* drop = dynamic_cast<const Dropout*>(dropout.get());  // null: a removed dropout
  return dropout_add_layer_norm(y, b, residual, ln.weight, ln.bias, drop ? drop->p : 0.0,
                                drop && drop->is_training(), ln.eps);
}

BertAttention::BertAttention(const BertConfig& c) {
  register_module("self", self, std::make_shared<BertSelfAttention>(c));
  register_module("output", output, std::make_shared<BertSelfOutput>(c, c.hidden_size));
}

Tensor BertAttention::forward(const Tensor& x, const Tensor& mask) {
  return output->forward(self->forward(x, mask), x);
}

BertIntermediate::BertIntermediate(const BertConfig& c) {
  register_module("dense", dense, ModulePtr(std::make_shared<Linear>(c.hidden_size, c.intermediate_size)));
  register_module("intermediate_act_fn", intermediate_act_fn, ModulePtr(std::make_shared<GELU>()));
}

void BertIntermediate::child_replaced(const std::string&) { fused = false; }

Tensor BertIntermediate::forward(const Tensor& x) {
  if (fused) {  // the fusion pass checked: a plain Linear (or SplitBias) with a bias, then GELU
    if (!dynamic_cast<const SplitBias*>(dense.get())) {  // a Linear: GELU in the GEMM's store where it can
      const auto& lin = static_cast<const Linear&>(*dense);
      return linear_gelu(x, lin.weight, lin.bias);
    }
    const auto [y, b] = split_dense(*dense, x);
    return bias_gelu(y, b);  // gelu(x·W1ᵀ + b1)
  }
  return (*intermediate_act_fn)((*dense)(x));
}

BertLayer::BertLayer(const BertConfig& c) {
  register_module("attention", attention, std::make_shared<BertAttention>(c));
  register_module("intermediate", intermediate, std::make_shared<BertIntermediate>(c));
  register_module("output", output, std::make_shared<BertOutput>(c));
}

Tensor BertLayer::forward(const Tensor& x, const Tensor& mask) {
  Tensor a = attention->forward(x, mask);  // (B, T, C)
  if (ffn_chunks && !grad_enabled() && intermediate->fused && output->fused && a.is_cpu()) {
    // inference, both blocks fused, denses with row products (fusion.h): the (B, T, I)
    // intermediate lives a chunk of rows at a time, in cache
    const auto* d1 = dynamic_cast<const SplitBias*>(intermediate->dense.get());
    const auto* d2 = dynamic_cast<const SplitBias*>(output->dense.get());
    if (d1 && d2 && d1->has_product_rows() && d2->has_product_rows())
      return output->add_norm(ffn_in_chunks(*d1, d1->split_bias(), *d2, a), d2->split_bias(), a);
  }
  return output->forward((*intermediate)(a), a);  // FFN: (B, T, I) -> (B, T, C), + a, LayerNorm
}

BertEncoder::BertEncoder(const BertConfig& c) {
  register_module("layer", layer, std::make_shared<ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(std::make_shared<BertLayer>(c));
}

Tensor BertEncoder::forward(const Tensor& x, const Tensor& mask) {
  Tensor h = x;
  for (size_t i = 0; i < layer->size(); ++i) h = layer->at<BertLayer>(i).forward(h, mask);
  return h;
}

}  // namespace mase::nn
