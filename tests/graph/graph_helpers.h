// tests/graph/graph_helpers.h — a seeded bert-tiny, example batches, and bitwise comparison.
#pragma once
#include <cstring>
#include <memory>
#include <vector>

#include "graph/trace.h"
#include "helpers.h"
#include "models/bert.h"

namespace mase::test {

// bert-tiny (L2 H128 A2 I512, 512 positions, 2 types) with HF's init drawn from seed.
inline std::shared_ptr<nn::BertForSequenceClassification> tiny_bert(uint64_t seed = 1,
                                                                   int64_t vocab = 30522) {
  manual_seed(seed);
  return std::make_shared<nn::BertForSequenceClassification>(nn::BertConfig::preset("bert-tiny", vocab));
}

// 2 sequences of 16 tokens, the second with its last 5 positions padded.
inline data::Batch tiny_batch(uint64_t seed = 3, int64_t vocab = 30522) {
  return graph::example_batch(2, 16, vocab, seed, 5);
}

// Same shape, dtype and bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

}  // namespace mase::test
