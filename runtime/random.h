// runtime/random.h — seeded random numbers from a counter-based generator (Philox4x32-10).
//
// Why counter-based: the value of element i depends only on (seed, offset + i), not on the
// order of draws or the thread that draws it. So fills are parallel and deterministic, a GPU
// kernel can produce exactly the same numbers as the CPU, and dropout can regenerate its mask
// in backward instead of storing it. A Generator is (seed, offset); each fill of n elements
// uses the counters [offset, offset + ceil(n/4)) and advances offset past them.
//
// Reference: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011.
#pragma once
#include <array>
#include <cstdint>

#include "runtime/tensor.h"

namespace mase {

struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;  // in units of 4-value Philox blocks
  explicit Generator(uint64_t s = 0) : seed(s) {}
  // Reserve the counters for n values and return the first block's offset.
  uint64_t advance(int64_t n) {
    uint64_t start = offset;
    offset += static_cast<uint64_t>((n + 3) / 4);
    return start;
  }
};

Generator& default_generator();   // process-wide, seeded by manual_seed
void manual_seed(uint64_t seed);  // resets the default generator to (seed, 0)

// Philox4x32-10: four 32-bit random words for a 128-bit counter and a 64-bit key.
// The same function runs on CPU and GPU (cuda/ has a __device__ copy).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);
// The form mase uses: counter = (block index, 0), key = seed.
inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  return philox4x32_10({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}
// Element i of a stream: word i%4 of block (offset + i/4).
inline uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox4x32(offset + i / 4, seed)[i % 4];
}
// A 32-bit word to a float in [0, 1): the top 24 bits, so every value is exact in f32.
inline float uint_to_unit(uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); }

// In-place fills (raw; no autograd). Values: uniform in [lo, hi); normal by Box–Muller.
void uniform_(const Tensor& t, double lo = 0.0, double hi = 1.0, Generator& gen = default_generator());
void normal_(const Tensor& t, double mean = 0.0, double stddev = 1.0,
             Generator& gen = default_generator());
Tensor rand(const Shape& shape, Generator& gen = default_generator());   // U[0, 1), f32
Tensor randn(const Shape& shape, Generator& gen = default_generator());  // N(0, 1), f32

}  // namespace mase
