// runtime/kernels/quant_scalar.h — the scalar formats, one element at a time, and their array kernels.
//
// The quantization kernels (contracts here in runtime/kernels/, CPU code in runtime/cpu/, the
// ops that call them in quant/quantize.cpp, quant/prune.cpp, quant/mxint8.cpp):
//   quant_scalar  integer, minifloat_ieee, minifloat_denorm, log (and the MX float elements)
//   quant_sign    binary, binary_scaling, ternary, residual sign: per-row statistics
//   quant_block   block_fp, block_minifloat, block_log, mxint8 and mxfp* fake quantization
//   mxint8        MXINT8 packed storage: quantize to int8 + E8M0, dequantize (two ways)
//   prune         the selection of the weights or activations a mask drops
// Only mxint8 has a CUDA twin so far; the others are CPU-only, and the quant ops refuse CUDA
// tensors with a clear error until theirs land (they are declared in mase::cpu only).
// The element functions below are inline so the array loops vectorise (8 floats per AVX2 op).
//
// The rule every format follows (../shared/specs/formats.md): the output is the representable
// value nearest to x, ties to the value whose code has an even last bit; beyond the largest
// magnitude saturate; NaN stays NaN. Outputs are stored in f32, so a format's values above
// f32's max (2^128 and up, only for 8-bit exponents) are not part of its set.
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

#include "runtime/kernels/quant_format.h"

namespace mase::cpu {

using quant::FormatParams;
using quant::Kind;

// Bit-level facts about f32 and f64 used by the kernels.
template <class T> struct FloatBits;
// Comparisons between bit patterns go through the signed type S: every pattern compared is
// that of a non-negative float (< 2^31 or 2^63), where signed and unsigned order agree, and
// AVX2 has signed integer compares only (an unsigned one costs extra instructions).
template <> struct FloatBits<float> {
  using U = uint32_t;
  using S = int32_t;
  static constexpr int kMant = 23, kBias = 127;
  static constexpr U kSign = 0x80000000u, kInf = 0x7f800000u;
};
template <> struct FloatBits<double> {
  using U = uint64_t;
  using S = int64_t;
  static constexpr int kMant = 52, kBias = 1023;
  static constexpr U kSign = 0x8000000000000000ull, kInf = 0x7ff0000000000000ull;
};

// 2^e as T, exact for every e T can hold (std::ldexp is not vectorised; this is only used
// when building parameters).
template <class T> T pow2(int64_t e) { return std::ldexp(T(1), static_cast<int>(std::clamp<int64_t>(e, -2000, 2000))); }

// ---- integer / fixed ---------------------------------------------------------------------
template <class T>
struct IntegerParams {
  T scale, inv_scale, lo, hi;  // 2^f, 2^−f, −2^(w−1), 2^(w−1)−1
};
template <class T>
IntegerParams<T> integer_params(int width, int frac_width) {
  return {pow2<T>(frac_width), pow2<T>(-frac_width), -pow2<T>(width - 1),
          pow2<T>(width - 1) - T(1)};
}
template <class T>
inline T integer_one(T x, const IntegerParams<T>& p) {
  T k = std::nearbyint(x * p.scale);        // RNE in the default rounding mode
  k = std::min(std::max(k, p.lo), p.hi);    // NaN passes through both (comparisons are false)
  return (k + T(0)) * p.inv_scale;          // + 0 turns −0 into +0: two's complement has no −0
}

// ---- minifloat: F fraction bits, exponents emin..emax, subnormals below 2^emin ------------
// minifloat_ieee(W, E, b):   F = W−E−1, emin = 1−b, emax = 2^E−1−b, max = (2−2^−F)·2^emax.
// minifloat_denorm(W, E, b): the values m·2^(c−b−M) (m < 2^M, every code c) are exactly the
//   numbers with at most M significant bits, so this is the same kind of grid with F = M−1,
//   emin = −b−1 (the finest grid is the "subnormal" range), emax = 2^E−2−b.
// MX float elements (E4M3, E5M2, E3M2, E2M3, E2M1): ieee with OCP's own max (448, 57344, ...).
struct MinifloatSpec {
  int F = 0;           // fraction bits after the leading one
  int emin = 0, emax = 0;
  double max = 0;      // largest magnitude (default (2 − 2^−F)·2^emax)
  int tie_flip = 0;    // F == 0: the even code is the even exponent code c = e + b
  bool tie_up = false; // denorm with M = 1: a tie between two grids goes to the coarser value
};
MinifloatSpec minifloat_spec(const quant::FormatParams& f);           // ieee, denorm or an MX element
MinifloatSpec minifloat_ieee_spec(int W, int E, int b);  // also used per block (block_minifloat)

template <class T>
struct MinifloatParams {
  using U = typename FloatBits<T>::U;
  U d;          // mantissa bits dropped in the normal range: 23 − F (f32) or 52 − F (f64)
  U half;       // 2^(d−1) − 1 (0 when d == 0): "just under half an ulp"
  U keep;       // mask that clears the d dropped bits
  U lsb_mask;   // 1 when d > 0: ties look at the lowest kept bit (to even)
  U lsb_flip;   // XORed into that bit: F == 0 makes it the parity of the exponent code
  U lsb_force;  // 1: ties always round up
  U emin_bits;  // bit pattern of 2^emin: below it, the subnormal grid
  T magic;      // 2^(emin − F + mantissa bits of T): (a + magic) − magic rounds to that grid
  U max_bits;   // bit pattern of the largest magnitude
};
template <class T>
MinifloatParams<T> minifloat_params(const MinifloatSpec& s);
// The f32 bit tricks need 2^emin and the magic constant to be normal f32 numbers; other
// biases take the f64 path (exact, slower). f64 always qualifies.
bool minifloat_f32_ok(const MinifloatSpec& s);

template <class T>
inline T minifloat_one(T x, const MinifloatParams<T>& p) {
  using B = FloatBits<T>;
  using U = typename B::U;
  const U u = std::bit_cast<U>(x);
  const U sign = u & B::kSign, a = u & ~B::kSign;
  // normal range: round the bit pattern to F fraction bits (carries move into the exponent)
  const U lsb = (((a >> p.d) ^ p.lsb_flip) & p.lsb_mask) | p.lsb_force;
  const U rn = (a + p.half + lsb) & p.keep;
  // subnormal range: the FPU rounds a + magic to a multiple of 2^(emin−F), ties to even
  const T af = std::bit_cast<T>(a);
  const U rs = std::bit_cast<U>((af + p.magic) - p.magic);
  using S = typename B::S;
  U r = S(a) >= S(p.emin_bits) ? rn : rs;
  r = S(r) > S(p.max_bits) ? p.max_bits : r;  // saturate (±inf included)
  return S(a) > S(B::kInf) ? x : std::bit_cast<T>(r | sign);  // NaN: keep it
}

// ---- log: 0 and ±2^k for k = kmin..kmax ----------------------------------------------------
struct LogSpec {
  int64_t kmin = 0, kmax = 0;  // exponents of the smallest and largest powers
};
LogSpec log_spec(int width, int bias);  // k = c − b for c = 1..2^(W−1)−1, within f32's range

template <class T>
struct LogParams {
  using U = typename FloatBits<T>::U;
  U sqrt2_mant;  // mantissa bits of the smallest T above √2: m ≥ it ⇔ m > √2
  U min_bits;    // 2^kmin
  T half_min;    // 2^(kmin−1) (may round to 0 in f32: then only 0 rounds to 0)
  U max_bits;    // 2^kmax
};
template <class T>
LogParams<T> log_params(const LogSpec& s);
bool log_f32_ok(const LogSpec& s);  // kmin ≥ −126: f32 subnormal inputs all round below 2^kmin

template <class T>
inline T log_one(T x, const LogParams<T>& p) {
  using B = FloatBits<T>;
  using U = typename B::U;
  constexpr U mant_mask = (U(1) << B::kMant) - 1;
  const U u = std::bit_cast<U>(x);
  const U sign = u & B::kSign, a = u & ~B::kSign;
  using S = typename B::S;
  const U up = S(a & mant_mask) >= S(p.sqrt2_mant) ? 1 : 0;  // m > √2: round the exponent up
  U r = ((a >> B::kMant) + up) << B::kMant;                  // 2^(e + up), as a bit pattern
  r = S(r) > S(p.max_bits) ? p.max_bits : r;
  const T af = std::bit_cast<T>(a);
  const U small = af > p.half_min ? p.min_bits : U(0);  // below 2^kmin: nearer of 0 and 2^kmin
  r = S(a) < S(p.min_bits) ? small : r;
  return S(a) > S(B::kInf) ? x : std::bit_cast<T>(r | sign);  // NaN: keep it
}

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
inline T mase_integer_one(T x, const IntegerParams<T>& p) {
  const T k = std::nearbyint(x * p.scale);       // torch.round: ties to even
  return std::min(std::max(k, p.lo), p.hi) * p.inv_scale;  // clamp keeps NaN and −0
}

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
