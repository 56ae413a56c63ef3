// runtime/kernels/quant_scalar.h — the scalar formats, one element at a time, and their array kernels.
//
// The quantization kernels (contracts here in runtime/kernels/, CPU code in runtime/cpu/, the
// ops that call them in quant/quantize.cpp, quant/prune.cpp, quant/mxint8.cpp):
//   quant_scalar  integer, minifloat_ieee, minifloat_denorm, log (and the MX float elements)
//   quant_sign    binary, binary_scaling, ternary, residual sign: per-row statistics
//   quant_block   block_fp, block_minifloat, block_log, mxint8 and mxfp* fake quantization
//   mxint8        MXINT8 packed storage: quantize to int8 + E8M0, dequantize (two ways)
//   prune         the selection of the weights or activations a mask drops
// Every kernel has a CUDA twin (cuda/<stem>.cu, declared at the end of each contract); the
// element math both run is one definition in quant_elem.h, so CPU == CUDA bit for bit.
// The element functions are inline so the array loops vectorise (8 floats per AVX2 op).
//
// The rule every format follows unless it says otherwise (../shared/specs/formats.md; log
// rounds in the log domain, below): the output is the representable value nearest to x, ties
// to the value whose code has an even last bit; beyond the largest magnitude saturate; NaN
// stays NaN. Outputs are stored in f32, so a format's values above f32's max (2^128 and up:
// wide exponent fields or small biases) are not part of its set.
//
// How each one rounds, and why it is exact:
//  * integer: k = RNE(x·2^f) clamped to [−2^(w−1), 2^(w−1)−1], then k·2^−f. Scaling by a power
//    of two is exact, so this is RNE on the fixed-point grid. (Equal in value to MASE's; MASE
//    keeps −0 where this gives +0 — "compat": "mase" below.)
//  * minifloat (ieee and denorm, see MinifloatParams): in the normal range the f32 bit pattern
//    is rounded directly: add half an ulp of the target (minus one, plus the kept LSB for ties
//    to even) and clear the dropped bits. A carry out of the mantissa moves into the exponent,
//    which is exactly "carry into the next binade" (1.97 -> 2.0 in E4M3; MASE got 1.875).
//    Below 2^emin the grid is uniform with spacing 2^(emin−F): (a + C) − C with
//    C = 2^(emin−F+23) makes the FPU round a to that grid, ties to even.
//  * log: rounding in the log domain goes up iff the mantissa m ∈ [1,2) of |x| exceeds √2
//    (the decision point 2^(k+0.5) is irrational, so no f32 lands on it and there are no ties).
//    Below the smallest power 2^kmin: the nearer of 0 and 2^kmin (linear distance; the tie at
//    2^(kmin−1) goes to 0, code 0, even).
//
// Read next: runtime/kernels/quant_block.h, then quant/quantize.h (the autograd op).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/kernels/backend.h"
#include "runtime/kernels/quant_elem.h"
#include "runtime/kernels/quant_format.h"

namespace mase::cpu {

using quant::FormatParams;
using quant::Kind;

// The element math lives in quant_elem.h, shared with the CUDA twins (cuda/quant_scalar.cu).
using quant::FloatBits;
using quant::integer_one;
using quant::integer_params;
using quant::IntegerParams;
using quant::log_f32_ok;
using quant::log_one;
using quant::log_params;
using quant::log_spec;
using quant::LogParams;
using quant::LogSpec;
using quant::mase_integer_one;
using quant::minifloat_f32_ok;
using quant::minifloat_ieee_spec;
using quant::minifloat_one;
using quant::minifloat_params;
using quant::minifloat_spec;
using quant::MinifloatParams;
using quant::MinifloatSpec;
using quant::pow2;

// minifloat_ieee(W, E, b):   F = W−E−1, emin = 1−b, emax = 2^E−1−b, max = (2−2^−F)·2^emax.
// minifloat_denorm(W, E, b): the values m·2^(c−b−M) (m < 2^M, every code c) are exactly the
//   numbers with at most M significant bits, so this is the same kind of grid with F = M−1,
//   emin = −b−1 (the finest grid is the "subnormal" range), emax = 2^E−2−b.
// MX float elements (E4M3, E5M2, E3M2, E2M3, E2M1): ieee with OCP's own max (448, 57344, ...).
// The f32 bit tricks need 2^emin and the magic constant to be normal f32 numbers
// (minifloat_f32_ok); other biases take the f64 path (exact, slower). Log: kmin ≥ −126.

// ---- "compat": "mase": MASE's formulas (src/chop/nn/quantizers/{integer,minifloat,log}.py) --
// The same steps in the same arithmetic (T: what PyTorch computes a T tensor in), so a student
// can reproduce the course's numbers. What they do differently from the rule above:
//   integer           −0 stays −0 (round(−0.3) = −0);
//   minifloat_*       the binade comes from floor/ceil(log2(|x| + 1e-9)), the sign from
//                     sign(x + 1e-9); |x| ≤ 1e-8 passes through unchanged (torch.isclose to 0);
//                     ±inf gives NaN (0·inf in the pass-through blend); ieee: the lowest binade
//                     2^−b.. is treated as subnormal; denorm: mantissas m/2^M in [0, 1)
//   log               no zero code: the powers are 2^−b .. 2^(2^(W−1)−1−b) and 0 maps to 2^−b
//                     (|x| + 0.1·2^−b before log2), rounding in the log domain
// log2 is the C library's; PyTorch's vectorised log2 may differ in the last ulp, which moves a
// result only for an input within an ulp of a binade edge.
struct MaseMinifloatSpec {
  int M = 0;                 // mantissa bits (W − E − 1)
  int emin = 0, emax = 0;    // −b and 2^E − 1 − b
  bool ieee = true;          // minifloat_ieee (implicit one) or minifloat_denorm
};
struct MaseLogSpec {
  int emin = 0, emax = 0;    // −b and 2^(W−1) − 1 − b
};

template <class T>
inline T mase_sign(T v) { return v > 0 ? T(1) : v < 0 ? T(-1) : v == 0 ? T(0) : v; }  // torch.sign

template <class T>
inline T mase_minifloat_one(T x, const MaseMinifloatSpec& s) {
  const T eps = T(1e-9);
  const T sign = mase_sign(x + eps), value = std::abs(x);
  const T l = std::log2(value + eps);
  const T e = std::clamp(s.ieee ? std::floor(l) : std::ceil(l), T(s.emin), T(s.emax));
  const T p2 = std::exp2(e), mantissa = value / p2, shift = std::exp2(T(s.M));
  T m;
  if (!s.ieee) {
    m = std::clamp(std::nearbyint(mantissa * shift), T(0), shift - 1) / shift;
  } else if (e != T(s.emin)) {  // "normal": 1.f
    m = T(1) + std::clamp(std::nearbyint(mantissa * shift - shift), T(0), shift - 1) / shift;
  } else {                      // MASE's subnormal: 0.f · 2 in the lowest binade
    m = std::clamp(std::nearbyint(mantissa * shift / 2), T(0), shift - 1) / shift * 2;
  }
  const bool close_to_0 = value <= T(1e-8);  // torch.isclose(value, 0): atol 1e-8
  // (!close)·q + close·x, as MASE blends: 0·inf = NaN, so ±inf gives NaN
  return T(!close_to_0) * (sign * p2 * m) + T(close_to_0) * x;
}

template <class T>
inline T mase_log_one(T x, const MaseLogSpec& s) {
  const T tiny = static_cast<T>(std::exp2(double(s.emin)) * 0.1);  // min_pos · 0.1
  const T sign = mase_sign(x + tiny), value = std::abs(x) + tiny;
  const T e = std::clamp(std::nearbyint(std::log2(value)), T(s.emin), T(s.emax));
  return sign * std::exp2(e);
}

// ---- array kernels -----------------------------------------------------------------------
// out[i] = Q(inp[i]) for a scalar format (integer, minifloat_ieee, minifloat_denorm, log),
// parallel over chunks. out may equal inp.
template <class T>
void scalar_forward(T* out, const T* inp, int64_t n, const quant::FormatParams& f);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/quant_scalar.cu ----
// f32 device pointers, one thread per element running the element functions of quant_elem.h:
// the same bits as the CPU. "compat": "mase" runs on the GPU for integer only: MASE's minifloat
// and log formulas call log2/exp2, whose CUDA versions differ from the C library's in the last
// ulp, so quant/quantize.cpp refuses those on a CUDA tensor (move it to the CPU).
namespace mase::cuda {

MASE_CUDA_FN(void, scalar_forward, (float* out, const float* inp, int64_t n,
                                    const quant::FormatParams& f))

}  // namespace mase::cuda
