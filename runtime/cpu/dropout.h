// runtime/cpu/dropout.h — the dropout mask drawn from Philox, and the kernel that applies it
// (twin: cuda/dropout.h). The op and its math are in autograd/ops/dropout.cpp.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/philox.h"

namespace mase {

// Element i is kept iff uint_to_unit(word i) >= p. uint_to_unit(w) = (w >> 8) / 2^24 exactly,
// so the test is done on the integers: (w >> 8) >= ceil(p · 2^24). Both devices compare the
// same integers (no float rounding of p can make them disagree); p = 1 gives 2^24: none kept.
inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}
MASE_HOST_DEVICE inline bool dropout_keep(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

// A dropout mask as the fused kernels take it: element i of a packed tensor is kept iff
// dropout_keep(word i of the Philox stream (seed, offset), threshold), and a kept value is
// multiplied by `scale` = 1/(1 − p) (in double: an f64 kernel rounds it to double, an f32
// one to float, as dropout() does). on = false: no dropout (keep all, scale 1).
struct DropoutMask {
  bool on = false;
  uint64_t seed = 0, offset = 0;
  uint32_t threshold = 0;
  double scale = 1.0;
};

}  // namespace mase

namespace mase::cpu {

// out[i] = keep(i) ? inp[i] · scale : 0 over n packed elements, where keep(i) tests word i of
// the Philox stream (seed, offset) against `threshold`. The backward of dropout is this same
// kernel applied to dout with the same (seed, offset): the mask is regenerated, never stored.
template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale);

// Philox words for kPhiloxBatch consecutive blocks at once: words[4j + l] = word l of block
// `block` + j under `key` — bit for bit philox4x32(block + j, key), but with the blocks in
// separate lanes, so the 10 rounds vectorise (AVX2: 8 blocks per vpmuludq). One block at a
// time the 32×32 → 64-bit multiplies stay scalar: ~4.6 ns an element; batched ~3 ns.
constexpr int kPhiloxBatch = 8;
inline void philox4x32_batch(uint32_t* __restrict words, uint64_t block, uint64_t key) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;  // as philox4x32_10 (runtime/philox.h)
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  uint32_t c0[kPhiloxBatch], c1[kPhiloxBatch], c2[kPhiloxBatch], c3[kPhiloxBatch];
  for (int j = 0; j < kPhiloxBatch; ++j) {
    const uint64_t c = block + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(c);
    c1[j] = static_cast<uint32_t>(c >> 32);
    c2[j] = 0;
    c3[j] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int j = 0; j < kPhiloxBatch; ++j) {
      const uint64_t p0 = uint64_t{kM0} * c0[j], p1 = uint64_t{kM1} * c2[j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
      c0[j] = n0;
      c1[j] = static_cast<uint32_t>(p1);
      c2[j] = n2;
      c3[j] = static_cast<uint32_t>(p0);
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int j = 0; j < kPhiloxBatch; ++j) {
    words[4 * j] = c0[j];
    words[4 * j + 1] = c1[j];
    words[4 * j + 2] = c2[j];
    words[4 * j + 3] = c3[j];
  }
}

// keep[j] = 1 if element first + j of the mask's stream is kept, else 0, for j < n (the
// fused kernels store it in the forward and read it in the backward: 1 byte an element read
// back is far cheaper than drawing the Philox words again).
inline void dropout_keep_mask(uint8_t* keep, int64_t first, int64_t n, const DropoutMask& m) {
  const int64_t end = first + n;
  int64_t e = first;
  uint32_t words[4 * kPhiloxBatch];
  while (e < end) {
    const int64_t base = e / 4 * 4;  // the batch starts at e's block
    philox4x32_batch(words, m.offset + static_cast<uint64_t>(e / 4), m.seed);
    const int64_t stop = std::min(end, base + 4 * kPhiloxBatch);
    for (; e < stop; ++e) keep[e - first] = dropout_keep(words[e - base], m.threshold) ? 1 : 0;
  }
}

}  // namespace mase::cpu
