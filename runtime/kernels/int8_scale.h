// runtime/kernels/int8_scale.h — one block's scaling in the int8 GEMMs, acc + s·sa·sb (s: the
// block's int32 sum, sa and sb: its two scales), in functions that the CPU and the GPU both
// compile (MASE_HOST_DEVICE, as in quant_elem.h), so that both give the same bits.
//
// The rule is the contract's (runtime/kernels/int8_gemm.h), int8_add_block below:
//   - in range: acc = fma(float(s), sa·sb, acc), with sa·sb an fp32 product. For power-of-two
//     scales (MXINT8's 2^(e−133), the integer formats' 2^−f) that product is exact, so the
//     exact term is rounded once.
//   - where the exact product of two finite scales is outside fp32's normal range, the fp32
//     product would be inf (then a block whose sum is 0 gives 0·inf = NaN) or lose bits, where
//     the fp32 reference Q(x)·Q(W)ᵀ is finite. There the term is computed in double.
// Its users: the CPU's scalar reference (int8_gemm_scaled_reference, runtime/cpu/int8_gemm.cpp,
// which its AVX kernels equal bit for bit, tested) calls int8_add_block; the MXINT8 × MXINT8
// tensor-core kernel (cuda/mxint8_mma.cu) calls int8_add_block_pow2, the same bits for
// MXINT8's scales in fp32 only (tests/runtime/test_mxint8_mma.cpp checks every pair of them).
//
// Why not (float(s)·sa)·sb, the obvious order: its first product can overflow where s·sa·sb
// does not (MXINT8 blocks of 2^121 and 2^−93: s·2^121 is inf for s ≥ 128, s·2^28 is not).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "runtime/philox.h"  // MASE_HOST_DEVICE

namespace mase {

// The exact product p of two finite scales is outside fp32's normal range.
MASE_HOST_DEVICE inline bool beyond_fp32(double p) {
  p = std::fabs(p);
  return p > double(FLT_MAX) || (p < double(FLT_MIN) && p > 0);
}

// acc + s·sa·sb, the rule above: the term in double where the exact sa·sb leaves fp32
// (double(float(s))·p is exact for power-of-two scales, so the term is rounded once there too)
MASE_HOST_DEVICE inline float int8_add_block(float acc, int32_t s, float sa, float sb) {
  const double p = double(sa) * double(sb);  // exact; not finite when sa or sb is not
  if (std::isfinite(p) && beyond_fp32(p)) return float(double(acc) + double(float(s)) * p);
  return std::fma(float(s), sa * sb, acc);
}

// |ab| strictly inside fp32's normal range. For ab = fp32(sa·sb) this implies the exact
// product is inside too (rounding is monotonic and both limits are floats), so int8_add_block
// is then fma(float(s), ab, acc): a test in fp32 for the common case.
MASE_HOST_DEVICE inline bool int8_scale_in_range(float ab) {
  const float m = std::fabs(ab);
  return m > FLT_MIN && m < FLT_MAX;
}

// int8_add_block for scales that are powers of two from 2^−133 up (MXINT8's, or NaN) and
// |s| ≤ 2^19 (a block of 32 int8 products), in fp32 only: fma(s·lo, hi, acc) with lo ≤ hi the
// two scales. s·lo is exact (its lowest bit is at least 2^−133; below 2^127 unless lo > 2^108,
// and then the term is above 2^216, inf either way), and an fma rounds the exact acc + s·lo·hi
// once, its product never overflowing or underflowing on the way: the exact term rounded once,
// which is what int8_add_block gives for such scales (a NaN scale gives NaN in both).
MASE_HOST_DEVICE inline float int8_add_block_pow2(float acc, int32_t s, float sa, float sb) {
  const bool a_lo = sa <= sb;  // false when either is NaN: then hi or s·lo is NaN
  return std::fma(float(s) * (a_lo ? sa : sb), a_lo ? sb : sa, acc);
}

}  // namespace mase
