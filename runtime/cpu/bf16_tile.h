// runtime/cpu/bf16_tile.h — what the bf16 GEMM driver (bf16.cpp) hands its AVX512-BF16
// microkernel (bf16_gemm_avx512.cpp; why it lives in its own file: runtime/cpu/int8_tile.h).
#pragma once
#include <cstdint>

namespace mase::cpu {

struct Bf16Tile {
  const uint16_t* a;  // mr rows of A, K padded to even, row stride lda (elements)
  int64_t lda;
  const uint16_t* b;  // one panel: for each pair of k, 32 columns × 2 values
  int64_t pairs;      // (K + 1) / 2
  float* c;
  int64_t ldc;
  const float* bias;  // nv values or null
  int mr, nv;
};

void bf16_tile_avx512(const Bf16Tile& t);
constexpr int kBf16MR = 6, kBf16NR = 32;

}  // namespace mase::cpu
