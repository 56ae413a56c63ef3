// tests/quant/tiny_models.h — small models for the quantize / prune pass tests: a BERT with
// the real module tree (paths, Linear children) at a size that runs in milliseconds, and a
// two-layer MLP for training runs.
#pragma once
#include <memory>
#include <vector>

#include "models/bert.h"
#include "runtime/random.h"

namespace mase::test {

// bert: 2 layers, hidden 32 (one MXINT8 block), 2 heads, FFN 64, vocab 50, 16 positions.
// 14 Linear layers: 6 per encoder layer (query, key, value, attention output, intermediate,
// output), the pooler and the classifier. Eval mode (no dropout). Another hidden size or
// layer count on request.
inline std::shared_ptr<nn::BertForSequenceClassification> tiny_bert(uint64_t seed = 1,
                                                                    int64_t hidden = 32,
                                                                    int64_t layers = 2) {
  nn::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = hidden;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 16;
  manual_seed(seed);
  auto m = std::make_shared<nn::BertForSequenceClassification>(c);
  m->eval();
  return m;
}

// (B, T) i32 token ids in [1, 50).
inline Tensor tiny_ids(int64_t B, int64_t T, uint64_t seed) {
  Generator g(seed);
  Tensor u = Tensor::empty({B, T});
  uniform_(u, 1, 50, g);
  std::vector<int32_t> ids;
  for (float v : u.to_vector<float>()) ids.push_back(static_cast<int32_t>(v));
  return Tensor::from(ids, {B, T});
}

// fc1 (in -> hidden), ReLU, fc2 (hidden -> out).
struct Mlp : nn::Module {
  nn::ModulePtr fc1, act, fc2;
  Mlp(int64_t in, int64_t hidden, int64_t out) {
    register_module("fc1", fc1, nn::ModulePtr(std::make_shared<nn::Linear>(in, hidden)));
    register_module("act", act, nn::ModulePtr(std::make_shared<nn::ReLU>()));
    register_module("fc2", fc2, nn::ModulePtr(std::make_shared<nn::Linear>(hidden, out)));
  }
  std::string type_name() const override { return "Mlp"; }
  Tensor forward(const Tensor& x) override { return (*fc2)((*act)((*fc1)(x))); }
};

}  // namespace mase::test
