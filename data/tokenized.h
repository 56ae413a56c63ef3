// data/tokenized.h — a tokenized split: every review's ids back to back, plus offsets.
//
// The layout of the token-id cache and of what the batcher reads: sequence i is
// ids[offsets[i] .. offsets[i+1]) (with its [CLS] and [SEP], untruncated), label labels[i].
// One flat array instead of 25,000 small vectors: one allocation, one write, one read.
//
// Read next: token_cache.h (how it is saved), batch.h (how it becomes tensors).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/imdb.h"
#include "data/tokenizer.h"

namespace mase::data {

struct TokenizedSplit {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};  // size() + 1 entries, offsets[0] == 0
  std::vector<int32_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
  std::span<const int32_t> sequence(int64_t i) const {
    return {ids.data() + offsets[i], static_cast<size_t>(length(i))};
  }
  void push_back(std::span<const int32_t> seq, int32_t label) {
    ids.insert(ids.end(), seq.begin(), seq.end());
    offsets.push_back(static_cast<int64_t>(ids.size()));
    labels.push_back(label);
  }
  bool operator==(const TokenizedSplit&) const = default;
};

// encode() of every review, in parallel on the oneTBB pool (mase::parallel_for), in order.
TokenizedSplit tokenize_all(const std::vector<Review>& reviews, const Tokenizer& tok);

// "" when both labels occur in `split`; otherwise a one-line warning naming the split and the
// missing class (a folder with no pos/ reviews gave accuracy 1.0000 and no hint).
std::string one_class_warning(const TokenizedSplit& split, const std::string& name);

}  // namespace mase::data
