// runtime/cpu/quant_scalar.cpp — parameters of the scalar formats and their array kernels.
// The element functions and the reasoning behind them are in scalar.h.
#include "runtime/kernels/quant_scalar.h"

#include <cfloat>

#include "runtime/parallel.h"

namespace mase::cpu {

MinifloatSpec minifloat_ieee_spec(int W, int E, int b) {
  MinifloatSpec s;
  s.F = W - E - 1;
  s.emin = 1 - b;
  s.emax = std::min((1 << E) - 1 - b, 127);  // binades above f32's are not part of the set
  s.max = (2.0 - std::ldexp(1.0, -s.F)) * std::ldexp(1.0, s.emax);
  // With no fraction bits a tie sits between 2^e (code c) and 2^(e+1) (code c+1); the kernel
  // sees the parity of the f32 exponent field e + 127, the code's parity is that of e + b.
  s.tie_flip = s.F == 0 ? ((b + 1) & 1) : 0;
  return s;
}

MinifloatSpec minifloat_spec(const quant::FormatParams& f) {
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
      s.max = (2.0 - std::ldexp(1.0, -s.F)) * std::ldexp(1.0, s.emax);
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

bool minifloat_f32_ok(const MinifloatSpec& s) {
  return s.emin >= -126 && s.emin - s.F + 23 <= 127;
}

template <class T>
MinifloatParams<T> minifloat_params(const MinifloatSpec& s) {
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

LogSpec log_spec(int width, int bias) {
  LogSpec s;
  s.kmin = std::max<int64_t>(1 - int64_t(bias), -149);
  s.kmax = std::min<int64_t>((int64_t(1) << (width - 1)) - 1 - bias, 127);
  return s;
}

bool log_f32_ok(const LogSpec& s) { return s.kmin >= -126; }

template <class T>
LogParams<T> log_params(const LogSpec& s) {
  using B = FloatBits<T>;
  using U = typename B::U;
  // the smallest T above √2 (no T equals √2; long double decides which side each lies on)
  const long double r2 = std::sqrt(2.0L);
  T t = static_cast<T>(r2);
  if (static_cast<long double>(t) < r2) t = std::nextafter(t, T(2));
  LogParams<T> p;
  p.sqrt2_mant = std::bit_cast<U>(t) & ((U(1) << B::kMant) - 1);
  p.min_bits = std::bit_cast<U>(pow2<T>(s.kmin));
  p.half_min = pow2<T>(s.kmin - 1);
  p.max_bits = std::bit_cast<U>(pow2<T>(s.kmax));
  return p;
}

namespace {

// out[i] = fn(inp[i], p) over [lo, hi). A function of its own with every argument by value:
// inlined into a lambda that captures by reference, GCC left the loop scalar on the
// single-thread path (parallel_for runs small or single-thread ranges inline).
template <class T, class P, class Fn>
void map_span(T* out, const T* inp, int64_t lo, int64_t hi, P p, Fn fn) {
  for (int64_t i = lo; i < hi; ++i) out[i] = fn(inp[i], p);
}

// f32 data, f64 arithmetic, for the rare parameters the f32 bit tricks cannot hold (integer
// wider than 25 bits, biases putting 2^emin below f32's normal range).
template <class P, class Fn>
void map_span_via_f64(float* out, const float* inp, int64_t lo, int64_t hi, P p, Fn fn) {
  for (int64_t i = lo; i < hi; ++i) out[i] = static_cast<float>(fn(double(inp[i]), p));
}

template <class T, class P, class Fn>
void map(T* out, const T* inp, int64_t n, P p, Fn fn) {
  parallel_for(0, n, kGrainElems, [=](int64_t lo, int64_t hi) { map_span(out, inp, lo, hi, p, fn); });
}

template <class P, class Fn>
void map_via_f64(float* out, const float* inp, int64_t n, P p, Fn fn) {
  parallel_for(0, n, kGrainElems, [=](int64_t lo, int64_t hi) { map_span_via_f64(out, inp, lo, hi, p, fn); });
}

}  // namespace

// Runs fn with params built for T, or (f32 data whose parameters the f32 tricks cannot hold)
// with f64 params; make(tag) builds the params for the type of tag.
template <class T, class Make, class Fn>
void run(T* out, const T* inp, int64_t n, bool f32_ok, Make make, Fn fn) {
  if constexpr (std::is_same_v<T, float>) {
    if (!f32_ok) return map_via_f64(out, inp, n, make(double()), fn);
  }
  map(out, inp, n, make(T()), fn);
}

// "compat": "mase": MASE's formulas element by element (quant_scalar.h), in T's arithmetic.
template <class T>
void scalar_forward_mase(T* out, const T* inp, int64_t n, const quant::FormatParams& f) {
  switch (f.kind) {
    case Kind::integer:
      return map(out, inp, n, integer_params<T>(f.width, f.frac_width),
                 [](T x, const IntegerParams<T>& p) { return mase_integer_one(x, p); });
    case Kind::log: {
      const MaseLogSpec s{-f.exponent_bias, (1 << (f.width - 1)) - 1 - f.exponent_bias};
      return map(out, inp, n, s, [](T x, const MaseLogSpec& p) { return mase_log_one(x, p); });
    }
    default: {  // minifloat_ieee, minifloat_denorm
      const MaseMinifloatSpec s{f.width - f.exponent_width - 1, -f.exponent_bias,
                                (1 << f.exponent_width) - 1 - f.exponent_bias,
                                f.kind == Kind::minifloat_ieee};
      return map(out, inp, n, s,
                 [](T x, const MaseMinifloatSpec& p) { return mase_minifloat_one(x, p); });
    }
  }
}

template <class T>
void scalar_forward(T* out, const T* inp, int64_t n, const quant::FormatParams& f) {
  if (f.mase_compat) return scalar_forward_mase(out, inp, n, f);
  switch (f.kind) {
    case Kind::integer:
      // f32 holds every k·2^−f exactly up to 25 bits (|k| ≤ 2^24); wider grids use f64
      return run(out, inp, n, f.width <= 25,
                 [&](auto t) { return integer_params<decltype(t)>(f.width, f.frac_width); },
                 [](auto x, const auto& p) { return integer_one(x, p); });
    case Kind::log: {
      const LogSpec s = log_spec(f.width, f.exponent_bias);
      return run(out, inp, n, log_f32_ok(s), [&](auto t) { return log_params<decltype(t)>(s); },
                 [](auto x, const auto& p) { return log_one(x, p); });
    }
    default: {  // minifloat_ieee, minifloat_denorm (and MX elements, unscaled)
      const MinifloatSpec s = minifloat_spec(f);
      return run(out, inp, n, minifloat_f32_ok(s),
                 [&](auto t) { return minifloat_params<decltype(t)>(s); },
                 [](auto x, const auto& p) { return minifloat_one(x, p); });
    }
  }
}

template MinifloatParams<float> minifloat_params<float>(const MinifloatSpec&);
template MinifloatParams<double> minifloat_params<double>(const MinifloatSpec&);
template LogParams<float> log_params<float>(const LogSpec&);
template LogParams<double> log_params<double>(const LogSpec&);
template void scalar_forward<float>(float*, const float*, int64_t, const quant::FormatParams&);
template void scalar_forward<double>(double*, const double*, int64_t, const quant::FormatParams&);

}  // namespace mase::cpu
