// runtime/cpu/int8_layout.h — the geometry of a blocked, padded K, shared by the int8 GEMM's
// driver (int8_gemm.cpp: packing A and B) and its wide-scale path (int8_gemm_wide.cpp:
// unpacking B again). The layout itself is described in runtime/kernels/int8_gemm.h.
//
// Every block of `block` k-values is padded to a multiple of 4 (the 4 bytes vpdpbusd sums), so a
// packed row holds the blocks one after another, each 4·gb bytes long (the last one 4·gl).
// Baseline code only: the ISA-specific microkernel files include int8_tile.h and nothing else.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mase::cpu {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct KLayout {
  int64_t block, nblocks, gb, gl, kp;  // gb / gl: groups of 4 per full / last block
};

inline KLayout k_layout(int64_t K, int64_t block) {
  KLayout l{};
  l.block = std::max<int64_t>(1, std::min(block, K));
  l.nblocks = K > 0 ? ceil_div(K, l.block) : 0;
  l.gb = ceil_div(l.block, 4);
  l.gl = l.nblocks ? ceil_div(K - (l.nblocks - 1) * l.block, 4) : 0;
  l.kp = l.nblocks ? 4 * ((l.nblocks - 1) * l.gb + l.gl) : 0;
  return l;
}

// Offset in a packed row of k (block by block, each padded to a multiple of 4).
inline int64_t packed_k(const KLayout& l, int64_t k) {
  const int64_t blk = k / l.block;
  return blk * l.gb * 4 + (k - blk * l.block);
}

}  // namespace mase::cpu
