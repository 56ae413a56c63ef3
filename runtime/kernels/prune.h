// runtime/kernels/prune.h — choosing exactly k elements to prune: the k smallest keys, ties
// broken by position. Used for weight masks (once) and activation masks (every forward).
//
// A key is a uint32 whose order is the pruning order:
//   l1-norm  the f32 bits of x with the sign cleared. For non-negative floats the bit pattern
//            is monotonic in the value (+0 < subnormals < normals < inf < NaN), so comparing
//            keys compares |x|, and a NaN sorts above everything: it is never pruned (and so
//            stays visible in the output) unless every element is.
//   random   a Philox word philox_word(seed, offset, i): k smallest of n independent uniform
//            words is a uniformly random k-subset, reproducible from (seed, offset).
// "The k smallest, ties by position" is then: find the k-th smallest key t; prune every key
// below t, and the first (k − #below) keys equal to t in position order.
//
// Two ways to find t:
//   select_smallest       radix select over many elements (a tensor, or several tensors taken
//                         as one sequence for global scope): a histogram of the top 16 bits
//                         finds t's bucket, a second pass over that bucket the low 16 bits.
//                         Three passes, no copy of the keys, no sort — 85 M weights of
//                         bert-base cost no extra memory.
//   select_smallest_rows  per row of an activation tensor (a few hundred to a few thousand
//                         elements): std::nth_element on a copy of the row's keys, rows in
//                         parallel.
// keep[i] = 0 for a pruned element, 1 otherwise (torch.nn.utils.prune's weight_mask).
// Read next: quant/prune.h (sparsity specs, masks of tensors, the activation op).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/philox.h"

namespace mase::cpu {

inline uint32_t magnitude_key(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7FFFFFFFu;
}

// The keys of one tensor (or row block), read on the fly: magnitudes of `values` when it is
// set, else random words of the Philox stream (seed, offset).
struct KeySource {
  const float* values = nullptr;
  int64_t n = 0;
  uint64_t seed = 0, offset = 0;
  uint32_t key(int64_t i) const {
    return values ? magnitude_key(values[i]) : philox_word(seed, offset, static_cast<uint64_t>(i));
  }
};

// Prune the k smallest keys of the sources taken in order as one sequence (0 ≤ k ≤ Σ n).
// keep[s] has src[s].n bytes. Returns the number pruned (= k).
int64_t select_smallest(const std::vector<KeySource>& src, int64_t k,
                        const std::vector<uint8_t*>& keep);

// Per row of `cols` elements of src (rows·cols = src.n): prune the k smallest of each row.
void select_smallest_rows(uint8_t* keep, const KeySource& src, int64_t rows, int64_t cols,
                          int64_t k);

}  // namespace mase::cpu
