// runtime/kernels/int8_gemm.h — int8 × int8 GEMMs with int32 accumulation, and the fp32 GEMM
// of block-scaled int8 codes (MXINT8, fixed-point integer formats) built on them.
//
// The math. A (M, K) and B (N, K) hold int8 codes, both K-contiguous (x rows and W rows of a
// Linear: C = A·Bᵀ, like y = x·Wᵀ). K is cut into blocks of `block` elements (the last one may
// be shorter); every row of A and of B has one fp32 scale per block, sa (M, nblocks) and
// sb (N, nblocks). Then
//   int32  Ci[i][j] = Σ_k A[i][k]·B[j][k]                                (one block: block ≥ K)
//   fp32   C[i][j]  = Σ_blk float(Σ_{k∈blk} A[i][k]·B[j][k]) · (sa[i][blk]·sb[j][blk]) (+ bias[j])
// The int32 sums are exact (|a·b| ≤ 2^14, and blocks are at most 65,536 long); only the
// per-block scaling is floating point, done in this order: acc = fma(float(s), sa·sb, acc)
// starting from acc = 0, block after block, then acc + bias. Every ISA path below does exactly
// these operations, so its result equals the scalar reference bit for bit (tested).
// Except where the fp32 product sa·sb leaves fp32's normal range (finite scales whose product
// is above FLT_MAX or below FLT_MIN: MXINT8 blocks near either end, 2^94·2^94 or 2^−101·2^−56):
// there it would be inf (and a block whose sum is 0 would give 0·inf = NaN) or lose bits, or all
// of them, where the fp32 reference Q(x)·Q(W)ᵀ is finite. That block's term is computed in
// double instead, acc = fp32(acc + float(s)·sa·sb), which for power-of-two scales (every format
// of quant/) is the exact term rounded once, as the fma does in range. The kernels stay as they
// are: the driver checks the scales once per call (O(M·nblocks), against B's range, noted at
// packing) and sends a call that has such a block, with a nonzero code on both sides, to the
// reference loops; oneDNN's path rescales such a run of rows instead (run_onednn).
// MXINT8 × MXINT8: block 32 and scales 2^(s−133) (E8M0 s, q/64), so each block's int32 sum is
// scaled by 2^(sa+sb−266) after accumulation. integer(w ≤ 8, f) × …: one scale 2^−f per row.
// Any fp32 scales work: block = K with one scale per row of B is per-output-channel int8.
//
// The ISA paths (chosen at run time from runtime/cpu_features.h; each has the reference as its
// fallback; the driver and packing are portable code in runtime/cpu/int8_gemm.cpp, the
// microkernels live in their own translation units compiled for their ISA):
//   avx512_vnni  vpdpbusd: 16 lanes × (4 u8·s8 products summed into int32) per instruction.
//                runtime/cpu/int8_gemm_vnni.cpp
//   avx2         vpmaddubsw (u8·s8 pairs → int16) + vpmaddwd (pairs → int32).
//                runtime/cpu/int8_gemm_avx2.cpp
//   onednn       oneDNN's int8 matmul (its brgemm kernels: VNNI here, AMX-INT8 tiles on Sapphire
//                Rapids), for B with one block per row (integer formats: block = K) on CPUs
//                with AVX512-VNNI or AMX-INT8 where oneDNN is built in. On VNNI-only CPUs our
//                kernel is the faster one up to K ~1024 (1.1-1.4x) and oneDNN's K-blocked
//                brgemm from K 2048 (docs/performance.md, "int8"); int8_isa_for picks by
//                shape. B lives in oneDNN's copy only;
//                rows of A go in runs that share a scale (one run for the integer formats);
//                scaled mode only. MXINT8's blocks of 32 (scales inside K) are beyond oneDNN
//                2.6's int8 matmul, and N or K under 64 gain nothing: packing those for onednn
//                packs them for our own best kernel instead.
//                runtime/cpu/onednn_packed.cpp
//   reference    three nested loops, the test oracle.
// Both SIMD instructions multiply an *unsigned* byte by a signed one, and our codes are signed
// on both sides; the two kernels solve that differently (the u8 offset trick for VNNI, the sign
// trick for AVX2) — explained in their files. The AVX2 trick needs B ≠ −128 (true for MXINT8,
// which is symmetric, and for integer widths ≤ 7); packing for AVX2 a B that holds −128 gives
// a reference-packed B instead (correct, slow; Int8PackedB::isa says which).
// Not hand-written: AMX-INT8 tiles (oneDNN's run there) and AVX-VNNI (the 256-bit VEX form of
// vpdpbusd on client CPUs).
//
// Read next: runtime/cpu/int8_gemm.cpp (packing and the loops around the microkernels),
// then quant/integer_linear.h (the Linear that quantizes x on the fly and calls this).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace mase::cpu {

enum class Int8Isa : uint8_t { reference, avx2, avx512_vnni, onednn };
const char* int8_isa_name(Int8Isa isa);  // "reference", "avx2", "avx512-vnni", "onednn"
bool int8_isa_supported(Int8Isa isa);    // can this CPU run it (runtime/cpu_features.h)
Int8Isa int8_isa_best();                 // the fastest one it can, in general
// The one to pack a B (N, K) with scale blocks of `block` for: int8_isa_best(), except where
// oneDNN cannot take B (several blocks per row, N or K under kOnednnMinNK) or our own kernel
// beats oneDNN's on this CPU (runtime/cpu/onednn_gemm.h, kOnednnVnniMinK).
Int8Isa int8_isa_for(int64_t N, int64_t K, int64_t block);

// Blocks longer than this could overflow the int32 sums of the VNNI kernel (255·128 per term).
constexpr int64_t kInt8MaxBlock = 65536;

struct OnednnInt8Weights;  // runtime/cpu/onednn_gemm.h: B in oneDNN's own blocked layout

// B packed once for one microkernel. Panels of `nr` columns; within a panel, every block of K
// is padded with zeros to a multiple of 4 and stored as groups of 4 k-values per column:
//   byte (column c, k = 4g + t) of panel p at data[p·kp·nr + g·4·nr + 4c + t]
// so one 64-byte load gives the 4 k-values of 16 columns, what vpdpbusd consumes. The reference
// layout (nr = 1) is B itself, row-major, unpadded.
struct Int8PackedB {
  Int8Isa isa = Int8Isa::reference;
  int64_t N = 0, K = 0;
  int64_t block = 0, nblocks = 0;  // scale blocks along K
  int64_t nr = 1;                  // panel width: 32 (VNNI), 16 (AVX2), 1 (reference)
  int64_t kp = 0;                  // K padded block by block to multiples of 4 (K for reference)
  bool has_min = false;            // some code is −128 (our own packings; onednn: false)
  std::vector<int8_t> data;
  std::vector<float> scales;  // reference: (N, nblocks); panels: [panel][block][nr]
  std::vector<int32_t> comp;  // VNNI only: 128·Σ_{k∈block} B[j][k], [panel][block][nr]
  // The range of B's scales, for the check above: the largest finite |scale|, and the smallest
  // finite nonzero |scale| of a block holding a nonzero code (0 and +inf when there is none)
  float scale_hi = 0.0f, scale_lo = std::numeric_limits<float>::infinity();
  std::shared_ptr<const OnednnInt8Weights> onednn;  // onednn only (then data is empty)
  int64_t panels() const { return nr ? (N + nr - 1) / nr : 0; }
  // the bytes it holds (onednn: oneDNN's copy of B as well as the reference layout)
  size_t nbytes() const;
};

// B (N, K) codes with row stride ldb, scales (N, nblocks) (nullptr: all 1). block ≥ K means one
// block per row (pass K). Packs for `isa` (or for the reference, see above).
Int8PackedB int8_pack_b(const int8_t* B, int64_t ldb, const float* scales, int64_t N, int64_t K,
                        int64_t block, Int8Isa isa);

// Ci (M, N) = A (M, K)·Bᵀ in int32. B must have one block and not be packed for onednn
// (ConfigError otherwise).
void int8_gemm(int32_t* Ci, int64_t ldc, const int8_t* A, int64_t lda, int64_t M,
               const Int8PackedB& B);
// C (M, N) = the block-scaled product above, + bias[j] when bias is not null. sa is (M, nblocks).
// a_offset: A holds offset codes (below) instead of the codes themselves.
void int8_gemm_scaled(float* C, int64_t ldc, const int8_t* A, int64_t lda, const float* sa,
                      int64_t M, const Int8PackedB& B, const float* bias, bool a_offset = false);

// Offset codes: each code a stored as the unsigned byte a + 128 (a ^ 0x80), what the VNNI
// kernel multiplies (int8_gemm_vnni.cpp's offset trick). The GEMM otherwise makes them itself,
// copying A into a packed buffer; handed offset codes and a B for which this is true, with K
// and the block multiples of 4 (every BERT shape), it reads A where it lies — no copy. The
// quantizers below write them directly when asked (offset = true).
bool int8_reads_offset_codes(const Int8PackedB& B);

// The oracles: plain loops over unpacked B (N, K), the same arithmetic in the same order.
void int8_gemm_reference(int32_t* Ci, int64_t ldc, const int8_t* A, int64_t lda, const int8_t* B,
                         int64_t ldb, int64_t M, int64_t N, int64_t K);
void int8_gemm_scaled_reference(float* C, int64_t ldc, const int8_t* A, int64_t lda,
                                const float* sa, const int8_t* B, int64_t ldb, const float* sb,
                                int64_t M, int64_t N, int64_t K, int64_t block, const float* bias);

// Activation codes for the fixed-point integer format (width ≤ 8, frac_width f):
// q = clamp(RNE(x·2^f), −2^(w−1), 2^(w−1)−1) — the same codes as quant_scalar's integer — and
// one scale per row, 2^−f, or NaN for a row holding a NaN (so its outputs are NaN, as in the
// fp32 reference, where NaN·w reaches every output of the row). x (rows, K) row-major.
void int8_quantize_integer(int8_t* q, float* row_scale, const float* x, int64_t rows, int64_t K,
                           int width, int frac_width, bool offset = false);

// Activation codes for mxint8: the same codes as runtime/kernels/mxint8.h's mxint8_quantize
// (blocks of 32 along K), with the scales as fp32: 2^(s−133), NaN for a block holding NaN/inf.
// scales is (rows, ceil(K/32)).
void int8_quantize_mxint8(int8_t* q, float* scales, const float* x, int64_t rows, int64_t K,
                          bool offset = false);

}  // namespace mase::cpu
