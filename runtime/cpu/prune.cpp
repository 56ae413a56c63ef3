// runtime/cpu/prune.cpp — exact k-smallest selection for pruning masks (see prune.h).
#include "runtime/kernels/prune.h"

#include <algorithm>

#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// The bucket b of a 65536-bucket histogram where the k-th smallest (1-based) lies, and the
// count of elements in the buckets before it.
std::pair<uint32_t, int64_t> find_bucket(const std::vector<int64_t>& hist, int64_t k) {
  int64_t below = 0;
  for (uint32_t b = 0; b < hist.size(); ++b) {
    if (below + hist[b] >= k) return {b, below};
    below += hist[b];
  }
  return {static_cast<uint32_t>(hist.size() - 1), below};  // unreachable for k ≤ total
}

}  // namespace

int64_t select_smallest(const std::vector<KeySource>& src, int64_t k,
                        const std::vector<uint8_t*>& keep) {
  if (k <= 0) {
    for (size_t s = 0; s < src.size(); ++s) std::fill_n(keep[s], src[s].n, uint8_t{1});
    return 0;
  }
  // pass 1: the bucket of the top 16 bits holding the k-th smallest key
  std::vector<int64_t> hist(1 << 16, 0);
  for (const KeySource& ks : src)
    for (int64_t i = 0; i < ks.n; ++i) ++hist[ks.key(i) >> 16];
  auto [hi, below_hi] = find_bucket(hist, k);
  // pass 2: within that bucket, the low 16 bits
  std::fill(hist.begin(), hist.end(), 0);
  for (const KeySource& ks : src)
    for (int64_t i = 0; i < ks.n; ++i) {
      const uint32_t key = ks.key(i);
      if ((key >> 16) == hi) ++hist[key & 0xFFFF];
    }
  auto [lo, below_lo] = find_bucket(hist, k - below_hi);
  const uint32_t t = (hi << 16) | lo;        // the k-th smallest key
  int64_t ties = k - (below_hi + below_lo);  // keys equal to t to prune, in position order
  // pass 3: the masks
  for (size_t s = 0; s < src.size(); ++s) {
    const KeySource& ks = src[s];
    uint8_t* m = keep[s];
    for (int64_t i = 0; i < ks.n; ++i) {
      const uint32_t key = ks.key(i);
      const bool pruned = key < t || (key == t && ties > 0);
      if (key == t && ties > 0) --ties;
      m[i] = pruned ? 0 : 1;
    }
  }
  return k;
}

void select_smallest_rows(uint8_t* keep, const KeySource& src, int64_t rows, int64_t cols,
                          int64_t k) {
  if (k <= 0 || cols == 0) {
    std::fill_n(keep, rows * cols, uint8_t{1});
    return;
  }
  if (k >= cols) {
    std::fill_n(keep, rows * cols, uint8_t{0});
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrainElems / cols);
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<uint32_t> keys(static_cast<size_t>(cols)), sorted(keys.size());
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = r * cols;
      // the row's keys, in a loop without branches (it vectorises for magnitudes)
      if (src.values) {
        const float* x = src.values + base;
        for (int64_t j = 0; j < cols; ++j) keys[j] = magnitude_key(x[j]);
      } else {
        for (int64_t j = 0; j < cols; ++j) keys[j] = src.key(base + j);
      }
      sorted = keys;  // nth_element reorders its input
      std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end());
      const uint32_t t = sorted[k - 1];  // the k-th smallest key of the row
      uint8_t* m = keep + base;
      int64_t below = 0;
      for (int64_t j = 0; j < cols; ++j) {
        below += keys[j] < t;
        m[j] = keys[j] > t;  // ties are settled below
      }
      int64_t ties = k - below;  // keys equal to t to prune, in position order
      for (int64_t j = 0; j < cols; ++j)
        if (keys[j] == t) m[j] = ties-- > 0 ? 0 : 1;
    }
  });
}

}  // namespace mase::cpu
