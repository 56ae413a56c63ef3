// runtime/random.h — seeded random numbers from a counter-based generator (Philox4x32-10).
//
// Why counter-based: the value of element i depends only on (seed, offset + i), not on the
// order of draws or the thread that draws it. So fills are parallel and deterministic, a GPU
// kernel can produce exactly the same numbers as the CPU, and dropout can regenerate its mask
// in backward instead of storing it. A Generator is (seed, offset); each fill of n elements
// uses the counters [offset, offset + ceil(n/4)) and advances offset past them.
//
// The generator itself is header-only in runtime/philox.h, shared with the CUDA kernels.
// Reference: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011.
#pragma once
#include <array>
#include <cstdint>

#include "runtime/philox.h"  // philox4x32_10, philox_word, uint_to_unit (host and device)
#include "runtime/tensor.h"

namespace mase {

struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;  // in units of 4-value Philox blocks
  // CUDA graphs (train/graph_step.h): while a step is captured, offsets are counted from 0 and
  // the GPU kernels add the value at this device address, which each replay sets to the
  // offset the step would have started from — so every replay draws fresh dropout masks, the
  // very masks an uncaptured step would. Null otherwise (and always on the CPU).
  const uint64_t* device_offset_base = nullptr;
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

// Saves the default generator and puts it back on scope exit, so that work which draws
// numbers only as a side effect (building modules whose weights are then loaded, a tracing
// run through dropout) leaves a seeded run's stream where it was.
struct KeepDefaultGenerator {
  Generator saved = default_generator();
  ~KeepDefaultGenerator() { default_generator() = saved; }
};

// In-place fills (raw; no autograd). Values: uniform in [lo, hi); normal by Box–Muller.
void uniform_(const Tensor& t, double lo = 0.0, double hi = 1.0, Generator& gen = default_generator());
void normal_(const Tensor& t, double mean = 0.0, double stddev = 1.0,
             Generator& gen = default_generator());
Tensor rand(const Shape& shape, Generator& gen = default_generator());   // U[0, 1), f32
Tensor randn(const Shape& shape, Generator& gen = default_generator());  // N(0, 1), f32

}  // namespace mase
