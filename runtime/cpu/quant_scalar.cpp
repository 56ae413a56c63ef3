// runtime/cpu/quant_scalar.cpp — the array kernels of the scalar formats. The element functions
// and their parameters are in runtime/kernels/quant_elem.h (shared with cuda/quant_scalar.cu),
// the reasoning behind them in runtime/kernels/quant_scalar.h.
#include "runtime/kernels/quant_scalar.h"

#include <cfloat>

#include "runtime/parallel.h"

namespace mase::cpu {

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

template void scalar_forward<float>(float*, const float*, int64_t, const quant::FormatParams&);
template void scalar_forward<double>(double*, const double*, int64_t, const quant::FormatParams&);

}  // namespace mase::cpu
