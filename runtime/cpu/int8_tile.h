// runtime/cpu/int8_tile.h — what the int8 GEMM driver (int8_gemm.cpp) hands a microkernel.
//
// A microkernel computes one tile of C: mr ≤ MR rows of A (already packed like B's blocks,
// see runtime/kernels/int8_gemm.h) against one panel of B (nr columns), over all of K, and
// writes the first nv ≤ nr columns. It is the only code that uses ISA-specific instructions,
// so each lives in its own translation unit compiled for its ISA (int8_gemm_vnni.cpp,
// int8_gemm_avx2.cpp), includes nothing but this header and <immintrin.h>, and is called only
// after cpu_features() said the CPU has that ISA. (Why so strict: an inline function from a
// shared header — std::min, a TBB template — compiled inside an AVX-512 file could be the copy
// the linker keeps for the whole program, and crash an AVX2 machine.)
#pragma once
#include <cstdint>

namespace mase::cpu {

struct Int8Tile {
  const uint8_t* a;      // mr rows of packed A, row stride lda bytes (VNNI: codes + 128)
  int64_t lda;
  const int8_t* b;       // one panel of packed B
  const int32_t* comp;   // VNNI: the panel's [block][nr] compensation; else unused
  const float* sb;       // the panel's [block][nr] scales (scaled mode)
  const float* sa;       // scaled mode: mr rows of A's scales, row stride lds; null: int32 mode
  int64_t lds;
  int64_t nblocks, gb, gl;  // blocks; groups of 4 k-values per full block and in the last one
  int mr, nv;
  float* c;              // scaled mode: C tile, row stride ldc
  int32_t* ci;           // int32 mode: C tile, row stride ldc
  int64_t ldc;
  const float* bias;     // nv values or null
  bool accumulate;       // VNNI scaled mode only: add to C's values (the sums of earlier slices
                         // of K); the AVX2 kernel gets all of K in one call and ignores it
};

void int8_tile_vnni(const Int8Tile& t);  // nr = 32, any mr: it walks the rows 6 at a time
// MXINT8 activation codes of rows r0..r1 of x (rows, K), AVX-512 (int8_quantize_avx512.cpp):
// what int8_quantize_mxint8 (runtime/kernels/int8_gemm.h) computes, on CPUs with AVX-512
// (offset: codes stored as a ^ 0x80)
void mxint8_codes_avx512(int8_t* q, float* scales, const float* x, int64_t r0, int64_t r1, int64_t K,
                         bool offset);
void int8_tile_avx2(const Int8Tile& t);  // nr = 16, mr ≤ 4
constexpr int kVnniMR = 6, kVnniNR = 32, kAvx2MR = 4, kAvx2NR = 16;
constexpr int64_t kVnniSliceBlocks = 16;  // scaled VNNI: blocks of K per slice (int8_gemm.cpp)

}  // namespace mase::cpu
