// runtime/cpu/amx_buffer.h — buffers for AMX tiles that start on a 64-byte cache line.
//
// A tile row is 64 bytes; loaded from an address that is not a multiple of 64 it straddles two
// lines, and tileloadd runs at half speed. malloc (std::vector) aligns to 16 bytes only:
// measured on one core of the Xeon of docs/performance.md ("AMX"), the same tile kernel ran
// 0.64–0.66 TFLOP/s from a buffer 16 bytes off a line and 1.04–1.28 from an aligned one.
// Used by the AMX drivers (bf16_amx.cpp, sdpa_amx.cpp), not by the file compiled for AMX.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mase::cpu {

// n elements in v (resized with room to spare), the first at a 64-byte boundary
inline uint16_t* aligned_tiles(std::vector<uint16_t>& v, int64_t n) {
  v.resize(static_cast<std::size_t>(n) + 32);
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<uint16_t*>((p + 63) & ~uintptr_t(63));
}

}  // namespace mase::cpu
