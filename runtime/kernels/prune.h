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
#include <bit>
#include <vector>

#include "runtime/kernels/backend.h"
#include "runtime/philox.h"

namespace mase::quant {

// Shared by the CPU kernels and their CUDA twins (cuda/prune.cu): the same keys on both.
MASE_HOST_DEVICE inline uint32_t magnitude_key(float x) {
  return std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
}

// The keys of one tensor (or row block), read on the fly: magnitudes of `values` when it is
// set, else random words of the Philox stream (seed, offset).
struct KeySource {
  const float* values = nullptr;
  int64_t n = 0;
  uint64_t seed = 0, offset = 0;
  MASE_HOST_DEVICE uint32_t key(int64_t i) const {
    return values ? magnitude_key(values[i]) : philox_word(seed, offset, static_cast<uint64_t>(i));
  }
};

}  // namespace mase::quant

namespace mase::cpu {

using quant::KeySource;
using quant::magnitude_key;

// Prune the k smallest keys of the sources taken in order as one sequence (0 ≤ k ≤ Σ n).
// keep[s] has src[s].n bytes. Returns the number pruned (= k).
int64_t select_smallest(const std::vector<KeySource>& src, int64_t k,
                        const std::vector<uint8_t*>& keep);

// Per row of `cols` elements of src (rows·cols = src.n): prune the k smallest of each row.
void select_smallest_rows(uint8_t* keep, const KeySource& src, int64_t rows, int64_t cols,
                          int64_t k);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/prune.cu (activation masks; weight masks are made once, on the CPU,
// from a host copy: quant/prune.cpp) ----
// The same selection, so the same masks bit for bit: the k-th smallest key t is found by
// counting (radix select: histograms of exact integer counts, in any order the same), and the
// ties equal to t are pruned in position order through prefix sums. keys.values is a device
// pointer (or null for random keys). No host synchronisation: every step is a kernel on the
// stream, the threshold stays in device memory.
namespace mase::cuda {

// Per row of `cols` keys: prune the k smallest of each row (one thread block per row).
MASE_CUDA_FN(void, select_smallest_rows, (uint8_t* keep, const quant::KeySource& keys,
                                          int64_t rows, int64_t cols, int64_t k))
// Over all keys.n keys as one sequence: prune the k smallest. `workspace` is a device buffer
// of select_smallest_workspace_bytes(keys.n) bytes.
MASE_CUDA_FN(void, select_smallest, (uint8_t* keep, const quant::KeySource& keys, int64_t k,
                                     void* workspace))

}  // namespace mase::cuda

namespace mase::quant {
// Bytes of device scratch cuda::select_smallest needs for n keys: a 65536-bin histogram, the
// threshold's state, and one tie count per chunk of 4096 keys (plus its prefix sum).
constexpr int64_t kSelectChunk = 4096;
inline int64_t select_smallest_workspace_bytes(int64_t n) {
  const int64_t chunks = (n + kSelectChunk - 1) / kSelectChunk;
  return 65536 * 8 + 64 + 2 * 8 * chunks;
}
}  // namespace mase::quant
