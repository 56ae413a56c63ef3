// runtime/philox.h — the Philox4x32-10 counter-based generator, for host and device code.
//
// Header-only so that one definition serves the CPU (runtime/random.cpp, runtime/cpu/dropout.cpp)
// and the GPU (cuda/dropout.cu): under nvcc every function here is __host__ __device__, so a
// CUDA kernel draws bit-for-bit the numbers the CPU draws. std::array's members are constexpr,
// which nvcc accepts in device code with --expt-relaxed-constexpr (cuda/CMakeLists.txt).
//
// Philox maps (counter, key) to four 32-bit words with 10 rounds of multiply / xor — no state,
// so element i of a stream is a pure function of (seed, offset, i). The user-facing API
// (Generator, fills) is runtime/random.h; read that first.
// Reference: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011.
#pragma once
#include <array>
#include <cstdint>

#ifdef __CUDACC__
#define MASE_HOST_DEVICE __host__ __device__
#else
#define MASE_HOST_DEVICE
#endif

namespace mase {

// The multipliers and the key's Weyl increments (also used by the CPU's vector versions,
// runtime/cpu/philox_x32.h: 8 lanes on AVX2, 16 in philox_avx512.cpp).
constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;

// Philox4x32-10: four 32-bit random words for a 128-bit counter and a 64-bit key.
MASE_HOST_DEVICE inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                                               std::array<uint32_t, 2> key) {
  // 10 rounds of: multiply two words by constants, xor the high halves with the other words
  // and the key; bump the key by the Weyl constants between rounds.
  constexpr uint32_t kM0 = kPhiloxM0, kM1 = kPhiloxM1;
  constexpr uint32_t kW0 = kPhiloxW0, kW1 = kPhiloxW1;
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{kM0} * c0, p1 = uint64_t{kM1} * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

// The form mase uses: counter = (block index, 0), key = seed.
MASE_HOST_DEVICE inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  return philox4x32_10({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

// Element i of a stream: word i%4 of block (offset + i/4).
MASE_HOST_DEVICE inline uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox4x32(offset + i / 4, seed)[i % 4];
}

// A 32-bit word to a float in [0, 1): the top 24 bits, so every value is exact in f32.
MASE_HOST_DEVICE inline float uint_to_unit(uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}

// Which rows of the dropout stream a tensor's rows stand for. A kernel that draws its mask
// row by row (word = row · row length + column) draws row `map(r)` for its row r:
//   map(r) = (r / period) · stride + first + r % period        (period 0: map(r) = r)
// graph/passes/narrow_cls.h uses it: a (B, 1, H) tensor holding token `first` of each
// sequence draws the words eager's (B, T, H) one draws for those tokens (period 1, stride T),
// so a narrowed training step keeps eager's dropout masks. logical_rows(rows) is how many rows
// the full stream has (what the generator advances by).
struct RowMap {
  int64_t period = 0, stride = 0, first = 0;
  MASE_HOST_DEVICE int64_t operator()(int64_t r) const {
    return period ? (r / period) * stride + first + r % period : r;
  }
  int64_t logical_rows(int64_t rows) const { return period ? rows / period * stride : rows; }
  bool identity() const { return period == 0; }
};

}  // namespace mase
