// runtime/kernels/sgemm_packed.h — our own fp32 GEMM for inference: the weight packed once,
// a register-tiled microkernel per ISA, the activations read in place.
//
//   C (M, N) = A (M, K) · Bᵀ (+ bias[j])      A = x rows (row stride lda), B = W (N, K)
//
// This is the last rungs of the GEMM ladder (bench/bench_gemm_ladder.cpp walks all of them:
// naive → loop order → cache blocking → packing + microkernel), kept in the product because
// at BERT's small shapes it beats a general BLAS: OpenBLAS copies ("packs") A and B on every
// call and tunes its blocking for big square products, while here B is packed by sgemm_pack_b
// (the inference Linear packs W per call, autograd/ops/matmul.cpp: N·K copies against M·N·K
// FMAs) and A one block at a time, by the thread that uses it (MR rows k-major, so the
// microkernel's broadcasts read one cache line in order).
//
// Packed B: panels of nr columns; in a panel, for every k, the nr values B[j][k] side by side:
//   data[p·K·nr + k·nr + c] = B[p·nr + c][k]     (zero for columns past N)
// so the microkernel loads one panel row per k with nr/16 (AVX-512) or nr/8 (AVX2) loads.
//
// Microkernels (runtime/cpu/sgemm_avx512.cpp, sgemm_avx2.cpp; int8_tile.h explains why they
// live in their own files): an MR × nr tile of C in registers, all of K:
//   avx512   12 × 32: 24 zmm accumulators, 2 B loads + 12 broadcasts per 24 FMAs, and B
//            prefetched 16 k steps ahead (without it the loads wait on L2: 0.64 → 0.80 of
//            sgemm, then 0.98 with the larger blocks it allowed; sgemm_packed.cpp)
//   avx2      6 × 16: 12 ymm accumulators, 2 B loads + 6 broadcasts per 12 FMAs
// Each accumulator element is a plain Σ_k in k order, one fma at a time (the same rounding as
// a scalar loop with fmaf), then + bias.
// Read next: runtime/cpu/sgemm_packed.cpp (the driver), bench/bench_gemm_ladder.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mase::cpu {

enum class F32Isa : uint8_t { avx2, avx512 };

// The driver's blocks (sgemm_packed.cpp says how they were chosen): MC rows of A by KC values
// of k are packed at a time. Results do not depend on them, bit for bit.
constexpr int64_t kSgemmMC = 192, kSgemmKC = 1024;
const char* f32_isa_name(F32Isa isa);  // "avx2", "avx512"
bool f32_isa_supported(F32Isa isa);
F32Isa f32_isa_best();

struct F32PackedB {
  F32Isa isa = F32Isa::avx2;
  int64_t N = 0, K = 0, nr = 16;
  std::vector<float> data;
  int64_t panels() const { return (N + nr - 1) / nr; }
  size_t nbytes() const { return 4 * data.size(); }
};

// Whether inference Linears (autograd/ops/matmul.cpp's linear, no autograd) use this GEMM for
// the shapes where it was measured faster than OpenBLAS (on by default; off for A/B runs).
void set_sgemm_packed_enabled(bool on);
bool sgemm_packed_enabled();

// B (N, K) with row stride ldb, packed for `isa` (ConfigError if this CPU lacks it).
F32PackedB sgemm_pack_b(const float* B, int64_t ldb, int64_t N, int64_t K, F32Isa isa);
// C (M, N), row stride ldc = A (M, K, row stride lda) · Bᵀ + bias (bias may be null).
void sgemm_packed(float* C, int64_t ldc, const float* A, int64_t lda, int64_t M,
                  const F32PackedB& B, const float* bias);

}  // namespace mase::cpu
