// runtime/cpu/sgemm_tile.h — what the fp32 packed GEMM driver (sgemm_packed.cpp) hands a
// microkernel: MR rows of A packed k-major, one packed panel of B, a slice of K, a tile of C.
// The microkernels live in their own translation units for their ISA and include nothing but
// this header and <immintrin.h> (runtime/cpu/int8_tile.h says why).
#pragma once
#include <cstdint>

namespace mase::cpu {

struct SgemmTile {
  const float* a;  // packed A: for each k, the MR values A[i][k] side by side (rows ≥ mr are 0)
  const float* b;  // one packed panel: K rows of nr floats (this call's slice of K)
  int64_t K;
  bool load_c;     // accumulate onto C (a later slice of K): the accumulators start at C
  float* c;        // the tile of C, row stride ldc
  int64_t ldc;
  const float* bias;  // nv values added at the end, or null (given with the last slice only)
  int mr, nv;         // rows ≤ MR, valid columns ≤ nr
};

void sgemm_tile_avx512(const SgemmTile& t);  // nr = 32, mr ≤ 12
void sgemm_tile_avx2(const SgemmTile& t);    // nr = 16, mr ≤ 6
constexpr int kSgemmAvx512MR = 12, kSgemmAvx512NR = 32, kSgemmAvx2MR = 6, kSgemmAvx2NR = 16;

}  // namespace mase::cpu
