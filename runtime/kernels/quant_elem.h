// runtime/kernels/quant_elem.h — one element of every number format: the math that the CPU
// kernels (runtime/cpu/quant_*.cpp, mxint8.cpp) and their CUDA twins (cuda/quant_*.cu,
// mxint8.cu) both run.
//
// Why one definition: a format is only useful on the GPU if it gives the GPU the same bits as
// the CPU (a QAT run must not change meaning with --device). Under nvcc every function here is
// __host__ __device__ (MASE_HOST_DEVICE, runtime/philox.h), so both backends compile the same
// lines, and "CPU == CUDA" follows by construction; tests/quant/test_cuda_quant.cpp checks it.
//
// Rules that keep one source bit-exact on two processors:
//  * only operations IEEE 754 defines exactly: + − × ÷, comparisons, conversions, RNE
//    (std::nearbyint on the host in the default rounding mode; rint on the device), bit
//    manipulations, ldexp (exact). No exp2/log2/pow: libm and CUDA's versions differ in the
//    last ulp. Exponents come from the bit patterns (or std::ilogb, which is exact).
//  * no a·b + c whose product is inexact: nvcc contracts it into one fma by default (and GCC
//    does on the host with -march=x86-64-v3). Every product below is a scaling by a power of two
//    or by ±1, which is exact, so a fused and an unfused evaluation agree.
//  * min/max through std::min/std::max (not fminf): a NaN first argument passes through both.
//
// The reasoning behind each format's rounding is in runtime/kernels/quant_scalar.h (scalar
// formats), quant_block.h and quant_sign.h; this file is the arithmetic only.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/kernels/quant_format.h"
#include "runtime/philox.h"  // MASE_HOST_DEVICE, uint_to_unit

namespace mase::quant {

// Bit-level facts about f32 and f64. Comparisons between bit patterns go through the signed
// type S: every pattern compared is that of a non-negative float (< 2^31 or 2^63), where
// signed and unsigned order agree, and AVX2 has signed integer compares only.
template <class T> struct FloatBits;
template <> struct FloatBits<float> {
  using U = uint32_t;
  using S = int32_t;
  static constexpr int kMant = 23, kBias = 127;
  static constexpr U kSign = 0x80000000u, kInf = 0x7f800000u;
  static constexpr U kSqrt2Mant = 0x3504F4u;  // mantissa of the smallest f32 above √2 (1.41421366)
};
template <> struct FloatBits<double> {
  using U = uint64_t;
  using S = int64_t;
  static constexpr int kMant = 52, kBias = 1023;
  static constexpr U kSign = 0x8000000000000000ull, kInf = 0x7ff0000000000000ull;
  static constexpr U kSqrt2Mant = 0x6A09E667F3BCDull;  // the smallest f64 above √2
};

// 2^e as T, exact for every e T can hold. A normal power of two is its exponent field alone,
// built from bits (the block formats build several per block of 16 or 32 elements, where a
// call of libm's ldexp cost a quarter of the CPU kernel's time); subnormal powers and those
// outside T's range take ldexp (exact too), so the value is the same either way.
template <class T>
MASE_HOST_DEVICE inline T pow2(int64_t e) {
  using B = FloatBits<T>;
  if (e >= 1 - B::kBias && e <= B::kBias)
    return std::bit_cast<T>(static_cast<typename B::U>(e + B::kBias) << B::kMant);
  return std::ldexp(T(1), static_cast<int>(std::clamp<int64_t>(e, -2000, 2000)));
}

// floor(log2 a) for a finite a > 0, exact: std::ilogb's value, from the exponent field where a
// is a normal double (every float is, widened), else ilogb itself.
MASE_HOST_DEVICE inline int64_t ilogb_pos(double a) {
  const int64_t field = static_cast<int64_t>((std::bit_cast<uint64_t>(a) >> 52) & 0x7FF);
  return field != 0 ? field - 1023 : std::ilogb(a);
}

// Round to nearest, ties to even (the default rounding mode; the device's rint is RNE).
template <class T>
MASE_HOST_DEVICE inline T rne(T x) { return std::nearbyint(x); }

// ---- integer / fixed ---------------------------------------------------------------------
template <class T>
struct IntegerParams {
  T scale, inv_scale, lo, hi;  // 2^f, 2^−f, −2^(w−1), 2^(w−1)−1
};
template <class T>
MASE_HOST_DEVICE inline IntegerParams<T> integer_params(int width, int frac_width) {
  return {pow2<T>(frac_width), pow2<T>(-frac_width), -pow2<T>(width - 1),
          pow2<T>(width - 1) - T(1)};
}
template <class T>
MASE_HOST_DEVICE inline T integer_one(T x, const IntegerParams<T>& p) {
  T k = rne(x * p.scale);                   // x·2^f is exact: RNE on the fixed-point grid
  k = std::min(std::max(k, p.lo), p.hi);    // NaN passes through both (comparisons are false)
  return (k + T(0)) * p.inv_scale;          // + 0 turns −0 into +0: two's complement has no −0
}
// "compat": "mase" (quant_scalar.h): the same without the + 0, so −0 stays −0.
template <class T>
MASE_HOST_DEVICE inline T mase_integer_one(T x, const IntegerParams<T>& p) {
  const T k = rne(x * p.scale);
  return std::min(std::max(k, p.lo), p.hi) * p.inv_scale;
}

// ---- minifloat: F fraction bits, exponents emin..emax, subnormals below 2^emin ------------
struct MinifloatSpec {
  int F = 0;           // fraction bits after the leading one
  int emin = 0, emax = 0;
  double max = 0;      // largest magnitude (default (2 − 2^−F)·2^emax)
  int tie_flip = 0;    // F == 0: the even code is the even exponent code c = e + b
  bool tie_up = false; // denorm with M = 1: a tie between two grids goes to the coarser value
};

MASE_HOST_DEVICE inline MinifloatSpec minifloat_ieee_spec(int W, int E, int b) {
  MinifloatSpec s;
  s.F = W - E - 1;
  s.emin = 1 - b;
  s.emax = std::min((1 << E) - 1 - b, 127);  // binades above f32's are not part of the set
  s.max = (2.0 - pow2<double>(-s.F)) * pow2<double>(s.emax);
  // With no fraction bits a tie sits between 2^e (code c) and 2^(e+1) (code c+1); the kernel
  // sees the parity of the f32 exponent field e + 127, the code's parity is that of e + b.
  s.tie_flip = s.F == 0 ? ((b + 1) & 1) : 0;
  return s;
}

// ieee, denorm, or an MX float element (E4M3, E5M2, E3M2, E2M3, E2M1, OCP's own maxima).
MASE_HOST_DEVICE inline MinifloatSpec minifloat_spec(const FormatParams& f) {
  switch (f.kind) {
    case Kind::minifloat_ieee: return minifloat_ieee_spec(f.width, f.exponent_width, f.exponent_bias);
    case Kind::minifloat_denorm: {
      // m·2^(c−b−M), m < 2^M: M significant bits, i.e. F = M−1 bits after the leading one;
      // the top of binade e is (2^M−1)·2^(e−M+1), the finest grid (c = 0) is 2^(−b−M).
      const int M = f.width - f.exponent_width - 1, b = f.exponent_bias;
      MinifloatSpec s;
      s.F = M - 1;
      s.emin = -b - 1;
      s.emax = std::min((1 << f.exponent_width) - 2 - b, 127);
      s.max = (2.0 - pow2<double>(-s.F)) * pow2<double>(s.emax);
      // M = 1: the values are 2^j; a tie 1.5·2^j is between 2^j (top of grid j) and 2^(j+1)
      // (m = 1 on grid j+1, the finest grid covering x): formats.md picks the covering grid.
      s.tie_up = s.F == 0;
      return s;
    }
    case Kind::mxfp8_e4m3: return {3, -6, 8, 448.0};      // S.1111.111 is NaN: max 1.75·2^8
    case Kind::mxfp8_e5m2: return {2, -14, 15, 57344.0};  // exponent 31 is inf/NaN
    case Kind::mxfp6_e3m2: return {2, -2, 4, 28.0};
    case Kind::mxfp6_e2m3: return {3, 0, 2, 7.5};
    case Kind::mxfp4_e2m1: return {1, 0, 2, 6.0};
    default: return {};
  }
}

// The f32 bit tricks need 2^emin and the magic constant to be normal f32 numbers; other
// biases take the f64 path (exact, slower). f64 always qualifies.
MASE_HOST_DEVICE inline bool minifloat_f32_ok(const MinifloatSpec& s) {
  return s.emin >= -126 && s.emin - s.F + 23 <= 127;
}

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
MASE_HOST_DEVICE inline MinifloatParams<T> minifloat_params(const MinifloatSpec& s) {
  using B = FloatBits<T>;
  using U = typename B::U;
  MinifloatParams<T> p;
  p.d = static_cast<U>(B::kMant - s.F);
  p.half = p.d > 0 ? (U(1) << (p.d - 1)) - 1 : 0;
  p.keep = ~((U(1) << p.d) - 1);
  p.lsb_mask = p.d > 0 ? 1 : 0;
  p.lsb_flip = static_cast<U>(s.tie_flip);
  p.lsb_force = s.tie_up ? 1 : 0;
  p.emin_bits = std::bit_cast<U>(pow2<T>(s.emin));
  p.magic = pow2<T>(s.emin - s.F + B::kMant);
  p.max_bits = std::bit_cast<U>(static_cast<T>(s.max));
  return p;
}

template <class T>
MASE_HOST_DEVICE inline T minifloat_one(T x, const MinifloatParams<T>& p) {
  using B = FloatBits<T>;
  using U = typename B::U;
  using S = typename B::S;
  const U u = std::bit_cast<U>(x);
  const U sign = u & B::kSign, a = u & ~B::kSign;
  // normal range: round the bit pattern to F fraction bits (carries move into the exponent)
  const U lsb = (((a >> p.d) ^ p.lsb_flip) & p.lsb_mask) | p.lsb_force;
  const U rn = (a + p.half + lsb) & p.keep;
  // subnormal range: the FPU rounds a + magic to a multiple of 2^(emin−F), ties to even
  const T af = std::bit_cast<T>(a);
  const U rs = std::bit_cast<U>((af + p.magic) - p.magic);
  U r = S(a) >= S(p.emin_bits) ? rn : rs;
  r = S(r) > S(p.max_bits) ? p.max_bits : r;  // saturate (±inf included)
  return S(a) > S(B::kInf) ? x : std::bit_cast<T>(r | sign);  // NaN: keep it
}

// ---- log: 0 and ±2^k for k = kmin..kmax ----------------------------------------------------
struct LogSpec {
  int64_t kmin = 0, kmax = 0;  // exponents of the smallest and largest powers
};
// k = c − b for c = 1..2^(W−1)−1, within f32's range
MASE_HOST_DEVICE inline LogSpec log_spec(int width, int bias) {
  LogSpec s;
  s.kmin = std::max<int64_t>(1 - int64_t(bias), -149);
  s.kmax = std::min<int64_t>((int64_t(1) << (width - 1)) - 1 - bias, 127);
  return s;
}
// kmin ≥ −126: f32 subnormal inputs all round below 2^kmin
MASE_HOST_DEVICE inline bool log_f32_ok(const LogSpec& s) { return s.kmin >= -126; }

template <class T>
struct LogParams {
  using U = typename FloatBits<T>::U;
  U sqrt2_mant;  // mantissa bits of the smallest T above √2: m ≥ it ⇔ m > √2
  U min_bits;    // 2^kmin
  T half_min;    // 2^(kmin−1) (may round to 0 in f32: then only 0 rounds to 0)
  U max_bits;    // 2^kmax
};
template <class T>
MASE_HOST_DEVICE inline LogParams<T> log_params(const LogSpec& s) {
  using B = FloatBits<T>;
  LogParams<T> p;
  p.sqrt2_mant = B::kSqrt2Mant;  // tests/quant/test_cuda_quant.cpp recomputes it in long double
  p.min_bits = std::bit_cast<typename B::U>(pow2<T>(s.kmin));
  p.half_min = pow2<T>(s.kmin - 1);
  p.max_bits = std::bit_cast<typename B::U>(pow2<T>(s.kmax));
  return p;
}

template <class T>
MASE_HOST_DEVICE inline T log_one(T x, const LogParams<T>& p) {
  using B = FloatBits<T>;
  using U = typename B::U;
  using S = typename B::S;
  constexpr U mant_mask = (U(1) << B::kMant) - 1;
  const U u = std::bit_cast<U>(x);
  const U sign = u & B::kSign, a = u & ~B::kSign;
  const U up = S(a & mant_mask) >= S(p.sqrt2_mant) ? 1 : 0;  // m > √2: round the exponent up
  U r = ((a >> B::kMant) + up) << B::kMant;                  // 2^(e + up), as a bit pattern
  r = S(r) > S(p.max_bits) ? p.max_bits : r;
  const T af = std::bit_cast<T>(a);
  const U small = af > p.half_min ? p.min_bits : U(0);  // below 2^kmin: nearer of 0 and 2^kmin
  r = S(a) < S(p.min_bits) ? small : r;
  return S(a) > S(B::kInf) ? x : std::bit_cast<T>(r | sign);  // NaN: keep it
}

// ---- block formats (quant_block.h): the shared parameter, then each element, in f64 --------
// Largest exponent of a normal element of each MX float format (OCP MX v1.0, table 1).
MASE_HOST_DEVICE inline int mx_emax(Kind k) {
  switch (k) {
    case Kind::mxfp8_e4m3: return 8;
    case Kind::mxfp8_e5m2: return 15;
    case Kind::mxfp6_e3m2: return 4;
    default: return 2;  // e2m3, e2m1
  }
}

// The shared parameter of a block whose max |x| is amax (finite: no NaN/inf in the block):
// block_fp: e; block_minifloat / block_log: the bias; MX: the E8M0 scale byte (0xFF = NaN).
// floor(log2 a) is ilogb(a), exact; ceil(log2 a) is one more unless a is a power of two.
MASE_HOST_DEVICE inline int block_shared_param(double amax, bool finite, const FormatParams& f) {
  const int E = f.exponent_width, W = f.width;
  if (is_mx(f.kind) && !finite) return 0xFF;
  const int64_t fl = amax > 0 ? ilogb_pos(amax) : -100000;  // all-zero block: clamps low
  switch (f.kind) {
    case Kind::block_fp:
      return int(std::clamp<int64_t>(fl, -f.exponent_bias, (1 << E) - 1 - f.exponent_bias));
    case Kind::block_minifloat:
      return int(std::clamp<int64_t>((1 << E) - 1 - fl, 0, (1 << f.exponent_bias_width) - 1));
    case Kind::block_log: {
      const int64_t cl = amax > 0 ? (pow2<double>(fl) == amax ? fl : fl + 1) : -100000;
      return int(std::clamp<int64_t>((int64_t(1) << (W - 1)) - 1 - cl, 0,
                                     (int64_t(1) << f.exponent_bias_width) - 1));
    }
    case Kind::mxint8:
      return amax > 0 ? int(std::clamp<int64_t>(fl, -127, 127)) + 127 : 0;
    default:  // mxfp*
      return amax > 0 ? int(std::clamp<int64_t>(fl - mx_emax(f.kind), -127, 127)) + 127 : 0;
  }
}

// block_fp element: sign·min(RNE(|x|/q), kmax)·q with q = 2^(e+1−M), kmax = 2^M − 1. |x|/q
// is |x|·inv_q, inv_q = 1/q: a power of two, so both are exact and equal (a multiply instead of
// a division per element).
MASE_HOST_DEVICE inline double block_fp_one(double x, double q, double inv_q, double kmax) {
  const double k = std::min(rne(std::abs(x) * inv_q), kmax);
  return std::copysign(k * q, x);
}
// mxint8 element (reference, f64): clamp(RNE(x·64/2^s), ±127)·2^s/64, with scale = 2^s.
MASE_HOST_DEVICE inline double mxint8_ref_one(double x, double scale) {
  const double qi = std::clamp(rne(x * 64.0 / scale), -127.0, 127.0);
  return qi * scale / 64.0 + 0.0;  // + 0: q = 0 is +0 (int8 has no −0)
}
// mxfp element: scale, quantize to the element format, scale back (exact: powers of 2).
MASE_HOST_DEVICE inline double mxfp_one(double x, double scale, const MinifloatParams<double>& p) {
  return scale * minifloat_one(x / scale, p);
}

// max |x| of a block in f64 (exact), and whether every element is finite.
struct BlockStats {
  double amax = 0;
  bool finite = true;
};
// On |x|'s bit pattern the same thing: a non-negative float's bits order as its value, so the
// largest pattern (a NaN's counted as 0) is the largest magnitude — an integer max, which the
// compiler vectorizes where the float loop's NaN rule keeps it scalar.
template <class T>
MASE_HOST_DEVICE inline BlockStats block_stats(const T* x, int64_t n) {
  using B = FloatBits<T>;
  using U = typename B::U;
  U top = 0, bad = 0;  // the largest non-NaN |x| pattern; the largest pattern of all
  for (int64_t i = 0; i < n; ++i) {
    const U a = std::bit_cast<U>(x[i]) & ~B::kSign;
    top = std::max(top, a & (U(0) - U(a <= B::kInf)));  // a NaN counts as 0 (mask, no branch)
    bad = std::max(bad, a);
  }
  BlockStats s;
  s.amax = double(std::bit_cast<T>(top));
  s.finite = bad < B::kInf;  // no inf (== kInf) and no NaN (> kInf)
  return s;
}

// What every element of one block needs once the block's max |x| is known: the format's
// element function and its parameters (from the shared parameter), or "all NaN" (a NaN or
// inf in the block) or "keep" (an all-zero block: ±0 stay; not mxint8, which has no −0).
// block_plan builds it from the block's stats, block_one applies it to one element:
// block_quantize is the two in a loop, and the CUDA kernel (cuda/quant_block.cu) runs
// block_one on one lane per element.
struct BlockPlan {
  Kind kind = Kind::block_fp;
  bool nan = false, keep = false;
  double q = 0, inv_q = 0, kmax = 0, scale = 0;  // block_fp: q, 1/q, kmax; MX: 2^s
  MinifloatParams<double> mf{};       // block_minifloat, mxfp*
  LogParams<double> lg{};             // block_log
};
MASE_HOST_DEVICE inline BlockPlan block_plan(const BlockStats& s, const FormatParams& f) {
  BlockPlan b;
  b.kind = f.kind;
  b.nan = !s.finite;
  // mxint8 is not kept: its elements are int8 q (no −0), so a block of ±0 takes the scale of
  // an all-zero block (s = 0) and every element becomes q = 0, i.e. +0, as the packed form
  b.keep = s.finite && s.amax == 0 && f.kind != Kind::mxint8;
  if (b.nan || b.keep) return b;
  const int p = block_shared_param(s.amax, s.finite, f);
  switch (f.kind) {
    case Kind::block_fp: {
      const int M = f.width - 1;
      b.q = pow2<double>(p + 1 - M);
      b.inv_q = pow2<double>(M - 1 - p);
      b.kmax = pow2<double>(M) - 1;
      break;
    }
    case Kind::block_minifloat:
      b.mf = minifloat_params<double>(minifloat_ieee_spec(f.width, f.exponent_width, p));
      break;
    case Kind::block_log:
      b.lg = log_params<double>(log_spec(f.width, p));
      break;
    case Kind::mxint8:
      b.scale = pow2<double>(p - 127);  // 2^s
      break;
    default:  // mxfp*
      b.scale = pow2<double>(p - 127);
      b.mf = minifloat_params<double>(minifloat_spec(f));
      break;
  }
  return b;
}
template <class T>
MASE_HOST_DEVICE inline T block_one(T x, const BlockPlan& b) {
  if (b.nan) return std::numeric_limits<T>::quiet_NaN();
  if (b.keep) return x;
  switch (b.kind) {
    case Kind::block_fp: return static_cast<T>(block_fp_one(double(x), b.q, b.inv_q, b.kmax));
    case Kind::block_minifloat: return static_cast<T>(minifloat_one(double(x), b.mf));
    case Kind::block_log: return static_cast<T>(log_one(double(x), b.lg));
    case Kind::mxint8: return static_cast<T>(mxint8_ref_one(double(x), b.scale));
    default: return static_cast<T>(mxfp_one(double(x), b.scale, b.mf));
  }
}

// y = Q(x) for one block of n elements (y may equal x). The CPU kernel calls it per block on
// a thread of its pool; the CUDA kernel runs block_plan and block_one on a group of lanes (or,
// for a block size that is not a power of two up to 32, calls this on one thread per block).
// (One loop per kind rather than block_one in one loop: the switch stays outside the loop,
// which the compiler then vectorizes where it can; the arithmetic is block_one's.)
template <class T>
MASE_HOST_DEVICE inline void block_quantize(T* y, const T* x, int64_t n, const FormatParams& f) {
  const BlockPlan b = block_plan(block_stats(x, n), f);
  if (b.nan || b.keep) {
    for (int64_t i = 0; i < n; ++i) y[i] = block_one(x[i], b);
    return;
  }
  switch (b.kind) {
    case Kind::block_fp:
      for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<T>(block_fp_one(double(x[i]), b.q, b.inv_q, b.kmax));
      return;
    case Kind::block_minifloat:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(minifloat_one(double(x[i]), b.mf));
      return;
    case Kind::block_log:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(log_one(double(x[i]), b.lg));
      return;
    case Kind::mxint8:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(mxint8_ref_one(double(x[i]), b.scale));
      return;
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(mxfp_one(double(x[i]), b.scale, b.mf));
      return;
  }
}

// ---- MXINT8 packed (mxint8.h): f32 bit tricks, the fast path ------------------------------
// 2^e for a normal exponent (−126 ≤ e ≤ 127), built from its bits (exact, no libm call).
MASE_HOST_DEVICE inline float mx_pow2(int e) {
  return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);
}
// The E8M0 scale of a block from max |x| as bits: the biased exponent field (NaN/inf: 0xFF).
MASE_HOST_DEVICE inline uint32_t mx_scale(uint32_t amax_bits) {
  return std::min<uint32_t>(amax_bits >> 23, 0xFFu);
}
// x·64/2^(s−127) = x·2^(133−s); for s < 6 that power overflows f32, so it is split in two
// factors (both multiplies are exact: |x|·2^(133−s) < 128 by the choice of s).
struct MxFactors {
  float f1, f2;
};
MASE_HOST_DEVICE inline MxFactors mx_factors(uint32_t s) {
  const int h = s < 6 ? 6 : 0;
  return {mx_pow2(133 - int(s) - h), mx_pow2(h)};  // 133−s−h ∈ [−121, 127]
}
MASE_HOST_DEVICE inline int8_t mx_quantize_one(float x, MxFactors f) {
  const float k = rne(x * f.f1 * f.f2);
  return static_cast<int8_t>(std::min(std::max(k, -127.0f), 127.0f));
}
// 2^(s−133) = 2^(s−127)/64, one element's step: NaN for s = 0xFF, an f32 subnormal for s < 7
// (built from its bits: 2^e = 1 << (e + 149) there).
MASE_HOST_DEVICE inline float mx_step(uint32_t s) {
  if (s == 0xFFu) return std::bit_cast<float>(0x7fc00000u);
  if (s < 7u) return std::bit_cast<float>(1u << (s + 16));
  return std::bit_cast<float>((s - 6u) << 23);
}
// value = q·2^(s−133): one exact multiply
MASE_HOST_DEVICE inline float mx_decode_mul(int8_t q, float step) { return float(q) * step; }
// The bf16 trick (mxint8.h), for 1 ≤ s ≤ 254.
MASE_HOST_DEVICE inline float mx_decode_bf16(int8_t q, uint32_t s) {
  const uint32_t sign = q < 0 ? 1u : 0u;
  const uint32_t a = static_cast<uint32_t>(q < 0 ? -q : q);  // |q| ≤ 127
  // bf16: 1 sign bit | 8 exponent bits | 7 mantissa bits; f32 is bf16 followed by 16 zeros
  const uint32_t bf16 = (sign << 15) | (s << 7) | ((a & 63u) << 1);
  const float v = std::bit_cast<float>(bf16 << 16);  // ±2^(s−127)·(1 + (|q|&63)/64)
  const float one = std::bit_cast<float>(s << 23);   // 2^(s−127), the implicit one
  return (a & 64u) ? v : v - std::copysign(one, v);  // integer bit clear: drop the one
}

// ---- sign formats (quant_sign.h) ---------------------------------------------------------
// binary: alpha where x ≥ 0, else neg (−alpha bipolar, 0 not); NaN stays.
template <class T>
MASE_HOST_DEVICE inline T binary_one(T x, T alpha, T neg) {
  return std::isnan(x) ? x : (x >= T(0) ? alpha : neg);
}
// stochastic: alpha with probability clamp((x+1)/2, 0, 1), from the Philox word w.
template <class T>
MASE_HOST_DEVICE inline T binary_stochastic_one(T x, uint32_t w, T alpha, T neg) {
  const T p = std::min(std::max((x + T(1)) / T(2), T(0)), T(1));
  const T u = static_cast<T>(uint_to_unit(w));
  return std::isnan(x) ? x : (u < p ? alpha : neg);
}
// ternary: +a where x > δ, −a where x < −δ, else 0 (two selects, no branch: vectorises).
template <class T>
MASE_HOST_DEVICE inline T ternary_one(T x, double delta, T a) {
  const double v = x;
  const T pos = v > delta ? a : T(0);
  return v < -delta ? -a : pos;
}
// residual sign, one level: the term |μ_l|·s_l added to the output and taken from r.
template <class T>
MASE_HOST_DEVICE inline T residual_term(T r, T m) { return r >= T(0) ? m : -m; }
// The initial μ_l = (L − l)/Σ for l = 0..L−1, Σ = L(L+1)/2, e.g. L = 2: (2/3, 1/3).
MASE_HOST_DEVICE inline double residual_level_init(int levels, int l) {
  const double total = levels * (levels + 1) / 2.0;
  return (levels - l) / total;
}

}  // namespace mase::quant
