// data/tokenized.cpp — tokenize_all: reviews -> TokenizedSplit, in parallel.
//
// Two passes, both parallel: encode every review into its own vector (a review's cost is
// its length, 0.1-14 KB, so chunks of 64 reviews balance well), then copy the vectors into
// the flat array at offsets given by a prefix sum of the lengths.
#include "data/tokenized.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/parallel.h"

namespace mase::data {

TokenizedSplit tokenize_all(const std::vector<Review>& reviews, const Tokenizer& tok) {
  const int64_t n = static_cast<int64_t>(reviews.size());
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(n));
  parallel_for(0, n, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) seqs[i] = tok.encode(reviews[i].text);
  });
  TokenizedSplit out;
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1, 0);
  out.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    offsets[i + 1] = offsets[i] + static_cast<int64_t>(seqs[i].size());
    out.labels[i] = reviews[i].label;
  }
  out.offsets = std::move(offsets);
  out.ids.resize(static_cast<size_t>(out.offsets[n]));
  parallel_for(0, n, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      std::copy(seqs[i].begin(), seqs[i].end(), out.ids.begin() + out.offsets[i]);
      std::vector<int32_t>().swap(seqs[i]);
    }
  });
  return out;
}

std::string one_class_warning(const TokenizedSplit& split, const std::string& name) {
  const int64_t pos = std::count(split.labels.begin(), split.labels.end(), 1);
  const int64_t neg = split.size() - pos;
  if (split.size() == 0 || (pos > 0 && neg > 0)) return "";
  return cat("[data] warning: the ", name, " split has ", pos, " positive and ", neg,
             " negative reviews: its accuracy measures one class only (is a pos/ or neg/ folder "
             "empty?)");
}

}  // namespace mase::data
