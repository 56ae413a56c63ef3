// runtime/cpu/int8_gemm_wide.h — the int8 GEMM's path for block scales whose product leaves
// fp32 (the rule: runtime/kernels/int8_gemm.h; the code and why: int8_gemm_wide.cpp).
// Called by the driver, runtime/cpu/int8_gemm.cpp, only.
#pragma once
#include <cstdint>

#include "runtime/cpu/int8_layout.h"
#include "runtime/kernels/int8_gemm.h"

namespace mase::cpu {

// At packing: B's scale range (Int8PackedB::scale_hi, scale_lo) from B (N, K) and its scales
// (N, nblocks; nullptr: all 1)
void int8_note_scale_range(Int8PackedB& p, const int8_t* B, int64_t ldb, const float* scales,
                           int64_t N, int64_t K, const KLayout& l);

// Per call, our own kernels (B packed for avx2 / avx512-vnni): whether some block of A needs
// the wide term, and if so the whole call in the reference loops. a_offset: A holds a ^ 0x80.
bool int8_needs_wide(const int8_t* A, int64_t lda, const float* sa, int64_t M,
                     const Int8PackedB& B, bool a_offset);
void int8_run_wide(float* C, int64_t ldc, const int8_t* A, int64_t lda, const float* sa,
                   int64_t M, const Int8PackedB& B, const float* bias, bool a_offset);

// oneDNN's path (one scale per row, B packed for onednn): whether a run of rows sharing the
// scale s (not NaN) needs the wide term, and if so those `rows` rows through oneDNN, rescaled.
bool int8_onednn_is_wide(float s, const Int8PackedB& B);
void int8_run_onednn_wide(float* C, int64_t ldc, const int8_t* A, int64_t lda, float s,
                          int64_t rows, const Int8PackedB& B, const float* bias);

}  // namespace mase::cpu
