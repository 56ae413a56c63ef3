// runtime/cpu/fast_math.h — exp, tanh and the normal CDF / density for f32, written so that
// loops over them vectorise.
//
// Why: glibc has vector versions of expf/tanhf (libmvec), but GCC only calls them under
// -ffast-math, which we do not use (it would also let the compiler assume no NaN or Inf
// anywhere in the file). A loop calling std::exp on floats is therefore one scalar call per
// element, ~8 ns, far slower than memory. The functions below are plain branch-free
// arithmetic (fma, min/max, selects, integer ops), so `for (i) y[i] = exp_f32(x[i])`
// compiles to 8-lane AVX2 code and runs at memory speed. (The selects need the project-wide
// -fno-trapping-math of CMakeLists.txt: without it GCC keeps `c ? a : b` on computed floats
// as a branch, and a loop with a branch is not vectorised.)
//
// Accuracy against double-precision libm, measured over every f32 (exp: every 13th in
// [-104, 88.72]; tanh: every 3rd in [-30, 30]): exp_f32 1.0 ulp at most, subnormal results
// included; tanh_f32 1.33 ulp at most. exp(-inf) = 0, exp(+inf) = +inf, tanh(±inf) = ±1, NaN
// in gives NaN out. tests/runtime/test_fast_math.cpp checks ≤ 2 ulp on a sample of millions.
// normal_cdf_f32, gelu_f32 and gelu_grad_f32 (exact GELU) are within 1e-6 relative wherever
// the result is a normal float (measured: 3.8e-7 at most).
// The polynomials of exp and tanh are Cephes' (S. L. Moshier, "Methods and Programs for
// Mathematical Functions", 1989), as used for expf/tanhf in many vector math libraries;
// erfc's form is Numerical Recipes' (Press et al., 2nd ed., §6.2, "erfcc"), refitted below.
//
// Other f32 kernels that call std::exp in a loop (cross-entropy) can use exp_f32 the same
// way. Read next: runtime/cpu/unary.cpp, gelu.cpp, softmax.cpp, sdpa.cpp (the kernels using
// them).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace mase::cpu {

// Every f32 function below must be inlined into the loop that calls it: a loop that calls an
// out-of-line function is not vectorised, and runs 8× slower. GCC's inliner decides by size,
// and normal_tail_f32 (then two exps and a polynomial) sat near its limit — a one-line change to
// exp_parts once pushed it over, and bias + GELU became scalar (an eval step of bert-small
// 2× slower). always_inline takes the decision away from the heuristic.
#define MASE_VEC_INLINE inline __attribute__((always_inline))

// e^x = 2^n · e^r with n = round(x / ln 2) and r = x - n·ln 2 in [-ln2/2, ln2/2]. This part
// returns n and e^r ≈ 1 + r + r²·P(r) (degree-5 P); the callers build 2^n in the exponent
// bits of a float. Valid while n stays an int (|x| < 1e9); NaN gives a NaN e^r.
struct ExpParts {
  float er;   // e^r, in [0.7, 1.42]
  int32_t n;  // the power of 2
};
MASE_VEC_INLINE ExpParts exp_parts(float x) {
  const float n = std::nearbyint(x * 1.44269504088896341f);  // x / ln 2
  // r = x - n·ln 2 in two steps (Cody–Waite): ln2_hi has few bits, so n·ln2_hi is exact
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  // NaN -> int is undefined behaviour (UBSan's float-cast-overflow; x86 happens to give
  // INT_MIN): convert 0 instead. e^r is NaN already, so the result stays NaN. A select: the
  // loop still vectorises.
  const float n_finite = n == n ? n : 0.0f;
  return {std::fma(p, r * r, r) + 1.0f, static_cast<int32_t>(n_finite)};
}

// 2^n for n in [-126, 127]: n + 127 in the exponent field.
MASE_VEC_INLINE float pow2i(int32_t n) { return std::bit_cast<float>((n + 127) << 23); }

// e^x for x in [-104, 89] (NaN passes through as NaN). There n ∈ [-150, 128], so 2^n is
// applied as two factors 2^h · 2^(n-h), each a normal float (a subnormal result is rounded
// once, by the last multiply), and the edges need no branch:
//   x > 88.72 (e^x > FLT_MAX) gives er·2^128 = +inf,  x < -103.97 (e^x < 2^-150) rounds to 0.
MASE_VEC_INLINE float exp_f32_in_range(float x) {
  const ExpParts e = exp_parts(x);
  const int32_t h = e.n >> 1;
  return e.er * pow2i(h) * pow2i(e.n - h);
}

// e^x for every float: clamped into [-104, 89] first, so e^(+inf) = +inf, e^(-inf) = 0, and
// NaN stays NaN (std::max/min return their first argument when a comparison is false).
MASE_VEC_INLINE float exp_f32(float x) {
  return exp_f32_in_range(std::min(std::max(x, -104.0f), 89.0f));
}

// e^x for x ≤ 88 (n ≤ 127), with results below e^-87 ≈ 1.6e-38 (near the smallest normal
// float) flushed to 0: what softmax and attention need, whose arguments x − max are ≤ 0 and
// whose tiny probabilities do not matter next to the row's largest (1). Then n ∈ [-126, 127]
// and 2^n is one factor; the bound is one-sided. ~35% faster than exp_f32 (which keeps
// subnormal results and clamps both ends), and e^(-inf) = 0 exactly, NaN stays NaN.
MASE_VEC_INLINE float exp_f32_flush(float x) {
  const ExpParts e = exp_parts(std::max(x, -87.0f));  // std::max(NaN, ·) is NaN
  const float y = e.er * pow2i(e.n);
  return x < -87.0f ? 0.0f : y;
}

// tanh x: an odd polynomial near 0, where 1 - 2/(e^2x + 1) would cancel, else
// sign(x)·(1 - 2/(e^{2|x|} + 1)). Both are computed and one is selected: no branch.
MASE_VEC_INLINE float tanh_f32(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = std::fma(p, z, 2.06390887954e-2f);
  p = std::fma(p, z, -5.37397155531e-2f);
  p = std::fma(p, z, 1.33314422036e-1f);
  p = std::fma(p, z, -3.33332819422e-1f);
  const float small = std::fma(p * z, x, x);  // x + x³·P(x²), for |x| < 0.625
  const float ax = std::abs(x);
  // e^{2|x|} for 2|x| in [0, 20] (past |x| = 9.01 tanh rounds to ±1 anyway): a one-sided
  // bound (2 instructions; exp_f32's NaN-keeping two-sided clamp takes about 8) and n in
  // [0, 29], so 2^n is one factor — tanh is compute-bound, each instruction shows
  const ExpParts ep = exp_parts(std::min(2.0f * ax, 20.0f));
  const float e = ep.er * pow2i(ep.n);
  const float big = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
  return ax < 0.625f ? small : big;  // NaN: the comparison is false and big is NaN
}

// Φ(x) = ½·erfc(−x/√2), the standard normal CDF, and φ(x) = e^{−x²/2}/√(2π), its density, for
// exact GELU: gelu(x) = x·Φ(x), gelu'(x) = Φ(x) + x·φ(x).
// erfc(z) for z = |x|/√2 ≥ 0, relative error 1.3e-7 (the float evaluation; the fit is 5e-9):
//   erfc(z) ≈ t·e^{−z²}·Q(t),  t = 1/(1 + z/2),  Q of degree 10 on t ∈ [0.124, 1] (|x| ≤ 20)
// relative, not absolute, so the far tail keeps its digits: Φ(−10) = 7.6e-24, where ½(1 + erf)
// would give 0. Q is a least-squares fit of erfcx(z)·(1 + z/2) in relative error, made once
// with mpmath (scripts/fit_erfc.py). It replaced Numerical Recipes' erfcc (t·exp(−z² + P(t)),
// P of degree 9), whose second exp cost a quarter of GELU's time; the error is the same.
// Then Φ(x) = ½·erfc(z) for x < 0 and 1 − ½·erfc(z) for x ≥ 0 (a select).
// e^{−z²} = e^{−x²/2} is computed from x, not from the rounded z: x² is split exactly into
// h + l (l = fma(x, x, −h)), and e^{−x²/2} = e^{−h/2}·e^{−l/2} ≈ e^{−h/2}·(1 − l/2). Squaring a
// rounded z instead would cost ulp(z²) ≈ 4e-6 relative at z² ≈ 50.
// |x| is capped at 20 (Φ(−20) ≈ 3e-89, far below the smallest float), which also keeps ±inf
// from making x·x − x·x a NaN; NaN passes through (std::min keeps its first argument).
struct NormalTail {
  float half_erfc;  // ½·erfc(|x|/√2) = Φ(−|x|)
  float gauss;      // e^{−x²/2}
};
MASE_VEC_INLINE NormalTail normal_tail_f32(float x) {
  const float ax = std::min(std::abs(x), 20.0f);
  const float t = 1.0f / std::fma(0.5f * 0.70710678118654752f, ax, 1.0f);  // 1/(1 + z/2)
  // Q(t) = erfc(z)·e^{z²}/t, degree 10 (scripts/fit_erfc.py): 1.3e-7 relative in float
  float q = 4.133411497e-02f;
  q = std::fma(q, t, -2.234479338e-01f);
  q = std::fma(q, t, 4.639442563e-01f);
  q = std::fma(q, t, -4.102515578e-01f);
  q = std::fma(q, t, 8.992158622e-02f);
  q = std::fma(q, t, -3.313384205e-02f);
  q = std::fma(q, t, 8.288376778e-02f);
  q = std::fma(q, t, 1.780815870e-01f);
  q = std::fma(q, t, 2.464420646e-01f);
  q = std::fma(q, t, 2.821325958e-01f);
  q = std::fma(q, t, 2.820933759e-01f);
  const float h = ax * ax;
  const float l = std::fma(ax, ax, -h);  // x² = h + l exactly
  const float g = exp_f32_in_range(std::max(-0.5f * h, -104.0f)) * std::fma(-0.5f, l, 1.0f);
  return {0.5f * t * g * q, g};
}

// Φ(x), the standard normal CDF.
MASE_VEC_INLINE float normal_cdf_f32(float x) {
  const float q = normal_tail_f32(x).half_erfc;
  return x < 0.0f ? q : 1.0f - q;  // NaN: 1 − NaN
}

// gelu(x) = x·Φ(x) and gelu'(x) = Φ(x) + x·φ(x), sharing the one evaluation of the tail.
MASE_VEC_INLINE float gelu_f32(float x) { return x * normal_cdf_f32(x); }
MASE_VEC_INLINE float gelu_grad_f32(float x) {
  const NormalTail n = normal_tail_f32(x);
  const float cdf = x < 0.0f ? n.half_erfc : 1.0f - n.half_erfc;
  return std::fma(x, 0.39894228040143267794f * n.gauss, cdf);  // φ(x) = e^{−x²/2}/√(2π)
}

// The kernels are templates over float and double: f32 takes the vectorisable versions above,
// f64 (used for gradient checks, where accuracy matters and speed does not) keeps libm.
template <class T>
MASE_VEC_INLINE T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}
template <class T>
MASE_VEC_INLINE T exp_flush_of(T x) {  // softmax's exps: exp_f32_flush for f32
  if constexpr (std::is_same_v<T, float>) return exp_f32_flush(x);
  else return std::exp(x);
}
template <class T>
MASE_VEC_INLINE T tanh_of(T x) {
  if constexpr (std::is_same_v<T, float>) return tanh_f32(x);
  else return std::tanh(x);
}

}  // namespace mase::cpu
