// data/stats.cpp — length_stats and the nearest-rank percentile (see stats.h).
#include "data/stats.h"

#include <algorithm>
#include <cmath>

namespace mase::data {

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<int64_t>(std::ceil(p / 100.0 * n));  // 1-based
  rank = std::clamp<int64_t>(rank, 1, static_cast<int64_t>(sorted.size()));
  return sorted[static_cast<size_t>(rank - 1)];
}

LengthStats length_stats(const TokenizedSplit& split, int32_t label) {
  std::vector<int64_t> len;
  for (int64_t i = 0; i < split.size(); ++i) {
    if (label < 0 || split.labels[i] == label) len.push_back(split.length(i));
  }
  LengthStats s;
  s.count = static_cast<int64_t>(len.size());
  if (len.empty()) return s;
  std::sort(len.begin(), len.end());
  int64_t over[3] = {0, 0, 0};
  for (int64_t l : len) {
    s.tokens += l;
    over[0] += l > 128;
    over[1] += l > 256;
    over[2] += l > 512;
  }
  const auto n = static_cast<double>(s.count);
  s.mean = static_cast<double>(s.tokens) / n;
  s.min = len.front();
  s.max = len.back();
  s.p50 = percentile(len, 50);
  s.p90 = percentile(len, 90);
  s.p95 = percentile(len, 95);
  s.p99 = percentile(len, 99);
  s.over128 = static_cast<double>(over[0]) / n;
  s.over256 = static_cast<double>(over[1]) / n;
  s.over512 = static_cast<double>(over[2]) / n;
  return s;
}

int64_t epoch_slots(const Batcher& b) {
  int64_t slots = 0;
  for (int64_t i = 0; i < b.num_batches(); ++i) {
    slots += static_cast<int64_t>(b.plan()[static_cast<size_t>(i)].size()) * b.width(i);
  }
  return slots;
}

}  // namespace mase::data
