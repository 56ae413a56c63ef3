// runtime/cpu/int8_gemm_wide.cpp — the int8 GEMM for block scales whose product leaves fp32.
//
// What and why. The scaled int8 GEMM applies each block's scales after the int32 sum as
// acc = fma(float(s), sa·sb, acc), with sa·sb an fp32 product. For finite scales near either
// end of fp32 that product is not the true one, while the fake-quantized fp32 reference
// Q(x)·Q(W)ᵀ, which multiplies the dequantized values, stays finite:
//   above FLT_MAX  (MXINT8 blocks of 2^100: 2^94·2^94 = 2^188 -> inf) a block whose int32 sum
//                  is 0 gives 0·inf = NaN for the whole output;
//   below FLT_MIN  (2^−101·2^−56 = 2^−157 -> 0) the block is dropped, though each of its
//                  products (2^−145) is an fp32 subnormal the reference keeps.
// There the block's term is computed in double, acc = fp32(acc + float(s)·sa·sb): for
// power-of-two scales (every format of quant/) the exact term rounded once, which is what the
// fma gives in range, so ordinary scales see no change (the rule: runtime/kernels/int8_gemm.h).
//
// How, without touching the microkernels (their hot loop stays as it is):
//   - at packing, B's scale range is noted (int8_note_scale_range);
//   - per call, A's scales are checked against it (int8_needs_wide), and a call that has such
//     a block goes to the scalar reference loops, B unpacked from its panels (int8_run_wide);
//   - oneDNN's path rescales a run of rows instead (int8_run_onednn_wide).
// Rare by construction: BERT-range data never gets here. The reference loops themselves
// (int8_gemm_scaled_reference, int8_gemm.cpp) apply the rule block by block: int8_add_block,
// runtime/kernels/int8_scale.h (which cuda/mxint8_mma.cu shares).
#include "runtime/cpu/int8_gemm_wide.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "runtime/cpu/onednn_gemm.h"

namespace mase::cpu {

namespace {

// n codes that are all 0 (zero: the byte of code 0, 0x80 for offset codes)
bool all_zero(const int8_t* codes, int64_t n, int8_t zero) {
  return std::all_of(codes, codes + n, [zero](int8_t v) { return v == zero; });
}

}  // namespace

// scale_hi: the largest finite |scale|; scale_lo: the smallest finite nonzero |scale| of a block
// holding a nonzero code (a block of zeros has a sum of 0 whatever its scale)
void int8_note_scale_range(Int8PackedB& p, const int8_t* B, int64_t ldb, const float* scales,
                           int64_t N, int64_t K, const KLayout& l) {
  for (int64_t j = 0; j < N; ++j)
    for (int64_t blk = 0; blk < l.nblocks; ++blk) {
      const float a = scales ? std::fabs(scales[j * l.nblocks + blk]) : 1.0f;
      if (!std::isfinite(a)) continue;
      p.scale_hi = std::max(p.scale_hi, a);
      if (a == 0 || a >= p.scale_lo) continue;
      const int64_t k0 = blk * l.block;
      if (!all_zero(B + j * ldb + k0, std::min(l.block, K - k0), 0)) p.scale_lo = a;
    }
}

// A call must take the reference loops when a block of A has a finite scale a whose product
// with some scale of B leaves fp32 — above FLT_MAX with any of B's (a sum of 0 gives
// 0·inf = NaN), or below FLT_MIN with a nonzero block of B while this block of A holds a
// nonzero code (a sum of 0 is 0 either way, so zero blocks, MXINT8's 2^−133, do not count).
// First a pass that the compiler vectorises, against float limits on the safe side (a few
// more scales pass them than need to): 0.05 ms for BERT-base's largest MXINT8 activations
// (8192 × 96 scales), 0.1% of that GEMM. Only when some scale passes, the exact pass, which
// reads the codes of a block below the lower limit.
bool int8_needs_wide(const int8_t* A, int64_t lda, const float* sa, int64_t M,
                     const Int8PackedB& B, bool a_offset) {
  const int64_t nb = B.nblocks;
  const float hi = std::nextafter(float(double(FLT_MAX) / B.scale_hi), 0.0f);      // ≤ the limit
  const float lo = std::nextafter(float(double(FLT_MIN) / B.scale_lo), INFINITY);  // ≥ the limit
  int64_t candidates = 0;
  for (int64_t n = 0; n < M * nb; ++n) {
    const float a = std::fabs(sa[n]);
    candidates += (a > hi || (a < lo && a > 0.0f)) ? 1 : 0;
  }
  if (candidates == 0) return false;
  const int8_t zero = a_offset ? int8_t(-128) : int8_t(0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t blk = 0; blk < nb; ++blk) {
      const double a = std::fabs(double(sa[i * nb + blk]));
      if (!(a < INFINITY)) continue;  // inf, NaN: the same in every path
      if (a * B.scale_hi > double(FLT_MAX)) return true;
      if (a * B.scale_lo < double(FLT_MIN) && a > 0) {
        const int64_t k0 = blk * B.block;
        if (!all_zero(A + i * lda + k0, std::min(B.block, B.K - k0), zero)) return true;
      }
    }
  return false;
}

// The reference loops for a B packed for avx2 / avx512-vnni: B's codes and scales unpacked from
// its panels, A's offset codes back to codes. Only calls that int8_needs_wide picks come here.
void int8_run_wide(float* C, int64_t ldc, const int8_t* A, int64_t lda, const float* sa,
                   int64_t M, const Int8PackedB& B, const float* bias, bool a_offset) {
  const int64_t N = B.N, K = B.K, nr = B.nr;
  const KLayout l = k_layout(K, B.block);
  std::vector<int8_t> b(size_t(N * K));
  std::vector<float> sb(size_t(N * l.nblocks));
  for (int64_t j = 0; j < N; ++j) {
    const int64_t pan = j / nr, c = j % nr;
    const int8_t* src = B.data.data() + pan * l.kp * nr;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t pk = packed_k(l, k);
      b[size_t(j * K + k)] = src[(pk / 4) * 4 * nr + 4 * c + pk % 4];
    }
    for (int64_t blk = 0; blk < l.nblocks; ++blk)
      sb[size_t(j * l.nblocks + blk)] = B.scales[size_t((pan * l.nblocks + blk) * nr + c)];
  }
  std::vector<int8_t> a;
  if (a_offset) {
    a.resize(size_t(M * K));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) a[size_t(i * K + k)] = int8_t(A[i * lda + k] ^ 0x80);
  }
  int8_gemm_scaled_reference(C, ldc, a_offset ? a.data() : A, a_offset ? K : lda, sa, b.data(), K,
                             sb.data(), M, N, K, B.block, bias);
}

bool int8_onednn_is_wide(float s, const Int8PackedB& B) {
  const double a = std::fabs(double(s));  // B.scale_lo is +inf when B's codes are all 0
  return a < INFINITY && (a * B.scale_hi > double(FLT_MAX) ||
                          (a * B.scale_lo < double(FLT_MIN) && a > 0));
}

// oneDNN gets the scale 2^−e instead (e: the exponent of B's largest scale, so 2^−e·sb ≤ 2 for
// every column, exactly), and the rest, s·2^e, is applied here in double per output, then the
// bias: for power-of-two scales the same single rounding of the exact term as the reference's
// (unless B's own nonzero scales span more than 2^149, which no format gives).
void int8_run_onednn_wide(float* C, int64_t ldc, const int8_t* A, int64_t lda, float s,
                          int64_t rows, const Int8PackedB& B, const float* bias) {
  const int e = std::max(std::ilogb(B.scale_hi), -127);  // 2^−e a float
  onednn_int8_gemm(C, ldc, A, lda, rows, *B.onednn, std::ldexp(1.0f, -e), nullptr);
  const double rest = std::ldexp(double(s), e);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < B.N; ++j) {  // + 0: −0 to +0, as fma(0, ·, +0) gives
      float& c = C[i * ldc + j];
      c = float(double(c) * rest) + (bias ? bias[j] : 0.0f);
    }
}

}  // namespace mase::cpu
