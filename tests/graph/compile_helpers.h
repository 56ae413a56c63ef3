// tests/graph/compile_helpers.h — a small BERT (C = 24, 3 heads, 2 layers), its batches, the
// eager fused reference (nn::fuse_kernels, or only one half of it) and one training step's
// loss and gradients, for the compile and pass tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph_helpers.h"
#include "models/fusion.h"
#include "models/lora.h"

namespace mase::test {

inline nn::BertConfig small_bert_config() {
  nn::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 24;  // 3 heads of 8: C not a multiple of 16
  c.num_hidden_layers = 2;
  c.num_attention_heads = 3;
  c.intermediate_size = 40;
  c.max_position_embeddings = 16;
  return c;
}

inline std::shared_ptr<nn::BertForSequenceClassification> small_bert(
    uint64_t seed = 1, const nn::BertConfig& c = small_bert_config()) {
  manual_seed(seed);
  return std::make_shared<nn::BertForSequenceClassification>(c);
}

// 3 sequences of `seq` tokens from a vocabulary of 50, the second with 2 padded positions.
inline data::Batch small_batch(int64_t seq = 7, uint64_t seed = 5) {
  return graph::example_batch(3, seq, 50, seed, 2);
}

// The eager model's fused flags: the FFN halves, the Add & Norm halves, or both (fuse_kernels).
inline void fuse_only(nn::Module& model, bool ffn, bool add_norm) {
  nn::unfuse_kernels(model);
  nn::fuse_kernels(model);
  for (auto& [path, m] : model.named_modules()) {
    if (auto* b = dynamic_cast<nn::BertIntermediate*>(m.get())) b->fused &= ffn;
    if (auto* b = dynamic_cast<nn::BertSelfOutput*>(m.get())) b->fused &= add_norm;
  }
}

// small_bert with rank-2 adapters on every encoder Linear, B random so that B·A matters.
inline std::shared_ptr<nn::BertForSequenceClassification> lora_bert() {
  auto model = small_bert();
  nn::LoraConfig lc;
  lc.rank = 2;
  lc.alpha = 4;
  nn::insert_lora(*model, lc);
  NoGradGuard ng;
  uint64_t seed = 40;
  for (auto& [path, p] : model->named_parameters())
    if (path.ends_with("lora_B")) copy_(p, random_tensor(p.shape(), seed++, -0.5, 0.5, DType::f32));
  return model;
}

inline std::vector<std::string> eval_inputs() { return {"input_ids", "attention_mask"}; }
inline std::vector<std::string> train_inputs() { return {"input_ids", "attention_mask", "labels"}; }

// The eager model's outputs on `batch` (logits, and loss when labels are given).
inline graph::TensorMap eager_outputs(nn::BertForSequenceClassification& model,
                                      const data::Batch& b, bool labels) {
  auto out = model.forward(b.input_ids, b.attention_mask, Tensor(), labels ? b.labels : Tensor());
  graph::TensorMap m{{"logits", out.logits}};
  if (labels) m["loss"] = out.loss;
  return m;
}

// How many nodes of `g` have this target.
inline int64_t count_target(const graph::Graph& g, const std::string& target) {
  int64_t n = 0;
  for (const graph::Node* node : g.nodes()) n += node->target == target;
  return n;
}

// One training step's loss and every parameter's gradient (dropout masks from seed 11): run
// is the forward (eager or compiled) returning the loss.
template <class F>
std::map<std::string, Tensor> loss_and_grads(nn::Module& model, F&& run) {
  for (const Tensor& p : model.parameters()) p.set_grad(Tensor());
  manual_seed(11);
  Tensor loss = run();
  backward(loss);
  std::map<std::string, Tensor> out{{"loss", loss.detach()}};
  for (const auto& [path, p] : model.named_parameters()) out[path] = p.grad();
  return out;
}

// max |a - b| over two tensors of the same shape (any device)
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

// max |a - b| / (1 + max |b|): a difference relative to the reference's scale
inline double rel_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (double v : b.to_vector<double>()) m = std::max(m, std::abs(v));
  return max_abs_diff(a, b) / (1 + m);
}

inline void check_all_bitwise(const std::map<std::string, Tensor>& a,
                              const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    INFO(name);
    if (!t.defined() || !b.at(name).defined()) {  // a frozen parameter: no gradient in either
      CHECK(t.defined() == b.at(name).defined());
      continue;
    }
    CHECK(bitwise_equal(t, b.at(name)));
  }
}

}  // namespace mase::test
