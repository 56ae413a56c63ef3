// data/stats.h — token-length statistics that `mase-data stats` prints.
//
// Lengths count every id of a sequence, [CLS] and [SEP] included: the length the model sees
// before truncation. Percentiles are nearest-rank: p-th percentile = the ceil(p/100 * n)-th
// smallest length (so p50 of {1, 2, 3, 4} is 2 and p100 is the maximum).
#pragma once
#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "data/tokenized.h"

namespace mase::data {

struct LengthStats {
  int64_t count = 0, tokens = 0;
  double mean = 0;
  int64_t min = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  // Share of sequences longer than 128, 256 and 512 ids: the ones truncated at that max_len.
  double over128 = 0, over256 = 0, over512 = 0;
};

// Nearest-rank percentile of `sorted` (ascending, non-empty), p in (0, 100].
int64_t percentile(const std::vector<int64_t>& sorted, double p);

// Statistics of the sequences with label `label`, or all of them when label < 0.
LengthStats length_stats(const TokenizedSplit& split, int32_t label = -1);

// Token slots a model computes on in one epoch of `b`: the sum of B x T over its batches.
// Compared with the real tokens, it says how much compute padding costs.
int64_t epoch_slots(const Batcher& b);

}  // namespace mase::data
