// tests/graph/graph_helpers.h — a seeded bert-tiny, example batches, bitwise comparison, and a
// small hand-made model for get_attr nodes and constants, and a --precision bf16 scope.
#pragma once
#include <cstring>
#include <memory>
#include <vector>

#include "graph/trace.h"
#include "helpers.h"
#include "models/bert.h"
#include "models/lora.h"
#include "models/parameters.h"
#include "runtime/parallel.h"

namespace mase::test {

// --precision bf16 for the life of the scope (fp32 again after it, even when a check throws)
struct Bf16Scope {
  Bf16Scope() { set_cpu_gemm_precision(GemmPrecision::bf16); }
  ~Bf16Scope() { set_cpu_gemm_precision(GemmPrecision::fp32); }
};

// bert-tiny (L2 H128 A2 I512, 512 positions, 2 types) with HF's init drawn from seed.
inline std::shared_ptr<nn::BertForSequenceClassification> tiny_bert(uint64_t seed = 1,
                                                                    int64_t vocab = 30522) {
  manual_seed(seed);
  return std::make_shared<nn::BertForSequenceClassification>(
      nn::BertConfig::preset("bert-tiny", vocab));
}

// 2 sequences of 16 tokens, the second with its last 5 positions padded.
inline data::Batch tiny_batch(uint64_t seed = 3, int64_t vocab = 30522) {
  return graph::example_batch(2, 16, vocab, seed, 5);
}

// Same shape, dtype and bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

// y = lin(x) * gain + c: a non-leaf module whose forward reads its own parameter (gain, a
// get_attr node when traced) and a raw tensor (c, a constant), around a leaf Linear (4 -> 3).
struct Scaled : nn::Module {
  nn::ModulePtr lin;
  Tensor gain, c = Tensor::full({3}, -0.5);
  Scaled() {
    register_module("lin", lin, nn::ModulePtr(std::make_shared<nn::Linear>(4, 3)));
    register_parameter("gain", gain, Tensor::full({3}, 2.0));
  }
  std::string type_name() const override { return "Scaled"; }
  bool is_leaf() const override { return false; }
  Tensor forward(const Tensor& x) override { return (*lin)(x)*gain + c; }
};

// Traces the unary call m(x) with one input "x" and one output "y".
inline graph::Graph trace_unary(const std::shared_ptr<nn::Module>& m, const Tensor& x) {
  return graph::trace(m, {{"x", x}}, [&](const graph::TensorMap& in) {
    return graph::NamedTensors{{"y", (*m)(in.at("x"))}};
  });
}

}  // namespace mase::test

namespace mase::graph {
// The parameter and LoRA passes act on the model (models/parameters.h, models/lora.h); the
// graph tests name them unqualified, inside mase::graph.
using nn::freeze;
using nn::FreezeReport;
using nn::fuse_lora;
using nn::FuseLoraReport;
using nn::insert_lora;
using nn::InsertLoraReport;
using nn::LoraConfig;
using nn::ParameterReport;
using nn::ParameterRow;
using nn::report_trainable_parameters;
using nn::unfreeze;
using nn::with_commas;
}  // namespace mase::graph
