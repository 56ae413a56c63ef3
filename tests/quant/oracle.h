// tests/quant/oracle.h — brute-force oracles for the number formats, written from
// ../shared/specs/formats.md and sharing no code with quant/.
//
// A scalar format is enumerated code by code: decode every code to a double with the spec's
// formula, keep the values f32 can hold, sort them. Quantizing x is then "the nearest value",
// found by looking at the two neighbours of x in the sorted list; a tie goes to the value with
// the even code (denorm: see DenormOracle). The fast kernels must agree on every input.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <cstdio>
#include <string>
#include <vector>

namespace mase::test {

struct Coded {
  double value;
  uint64_t code;
};

// A finite set of representable values with a tie rule.
struct ValueSet {
  std::vector<double> values;            // sorted, distinct, both signs
  std::map<double, uint64_t> even_code;  // value -> 1 if some code of it ends in 0, else 0

  void build(const std::vector<Coded>& coded) {
    std::map<double, uint64_t> m;
    for (const Coded& c : coded) {
      if (!(std::abs(c.value) <= FLT_MAX)) continue;  // f32 storage cannot hold it
      if (c.value != 0 && std::abs(c.value) < 0x1p-149) continue;
      double v = c.value == 0 ? 0.0 : c.value;     // +0 and −0 are one value
      auto [it, fresh] = m.emplace(v, 0);
      if ((c.code & 1) == 0) it->second = 1;
    }
    values.clear();
    for (auto& [v, e] : m) values.push_back(v);
    even_code = std::move(m);
  }
  double max() const { return values.back(); }
  double min_positive() const { return *std::upper_bound(values.begin(), values.end(), 0.0); }

  // Neighbours lo ≤ x ≤ hi (equal when x is in the set); x within [min, max].
  std::pair<double, double> neighbours(double x) const {
    auto it = std::lower_bound(values.begin(), values.end(), x);
    if (*it == x) return {x, x};
    return {*(it - 1), *it};
  }

  // Nearest value, ties to the value with an even code; beyond ±max saturate; NaN stays.
  double nearest(double x) const {
    if (std::isnan(x)) return x;
    if (x >= max()) return max();
    if (x <= values.front()) return values.front();
    auto [lo, hi] = neighbours(x);
    if (lo == hi) return lo;
    long double twice = 2.0L * x, sum = (long double)lo + hi;  // exact for neighbours
    if (twice < sum) return lo;
    if (twice > sum) return hi;
    return even_code.at(lo) ? lo : hi;
  }
};

// ---- decoders, straight from formats.md -------------------------------------------------------
inline std::vector<Coded> integer_codes(int w, int f) {
  std::vector<Coded> out;
  for (uint64_t c = 0; c < (uint64_t(1) << w); ++c) {
    int64_t k = c < (uint64_t(1) << (w - 1)) ? int64_t(c) : int64_t(c) - (int64_t(1) << w);
    out.push_back({std::ldexp(double(k), -f), c});
  }
  return out;
}

// sign | exponent code c (E bits) | mantissa m (M bits). ieee: c = 0 is subnormal
// 2^(1−b)·m/2^M, else 2^(c−b)·(1 + m/2^M); denorm: always 2^(c−b)·m/2^M (no implicit one).
inline std::vector<Coded> minifloat_codes(int W, int E, int b, bool denorm) {
  const int M = W - E - 1;
  std::vector<Coded> out;
  for (uint64_t code = 0; code < (uint64_t(1) << W); ++code) {
    uint64_t m = code & ((uint64_t(1) << M) - 1), c = (code >> M) & ((uint64_t(1) << E) - 1);
    bool neg = (code >> (W - 1)) & 1;
    double v = denorm   ? std::ldexp(double(m), int(c) - b - M)
               : c == 0 ? std::ldexp(double(m), 1 - b - M)
                        : std::ldexp(1.0 + std::ldexp(double(m), -M), int(c) - b);
    out.push_back({neg ? -v : v, code});
  }
  return out;
}
inline std::vector<Coded> minifloat_ieee_codes(int W, int E, int b) { return minifloat_codes(W, E, b, false); }
inline std::vector<Coded> minifloat_denorm_codes(int W, int E, int b) { return minifloat_codes(W, E, b, true); }

// sign | exponent code c (W−1 bits); c = 0 is zero
inline std::vector<Coded> log_codes(int W, int b) {
  std::vector<Coded> out;
  for (uint64_t code = 0; code < (uint64_t(1) << W); ++code) {
    uint64_t c = code & ((uint64_t(1) << (W - 1)) - 1);
    bool neg = (code >> (W - 1)) & 1;
    double v = c == 0 ? 0.0 : std::ldexp(1.0, int(c) - b);
    if (c != 0 && (int64_t(c) - b > 127 || int64_t(c) - b < -149)) v = INFINITY;  // dropped
    out.push_back({neg ? -v : v, code});
  }
  return out;
}

// minifloat_denorm's tie rule (formats.md): "ties to the even code on the finest grid covering
// x". Grid j holds m·2^j, m = 0..2^M−1; the finest covering |x| is the smallest j whose largest
// value reaches |x|. A tie between a value on that grid and one that is not goes to the one on
// it; between two values on it, to the even m.
struct DenormOracle {
  ValueSet set;
  int M, jmin, jmax;
  DenormOracle(int W, int E, int b) : M(W - E - 1), jmin(-b - M), jmax((1 << E) - 1 - b - M) {
    set.build(minifloat_denorm_codes(W, E, b));
  }
  double nearest(double x) const {
    if (std::isnan(x)) return x;
    double a = std::abs(x), s = std::signbit(x) ? -1 : 1;
    if (a >= set.max()) return s * set.max();
    auto [lo, hi] = set.neighbours(a);
    if (lo == hi) return s * lo;
    long double twice = 2.0L * a, sum = (long double)lo + hi;
    if (twice != sum) return s * (twice < sum ? lo : hi);
    int j = jmin;
    while (j < jmax && std::ldexp(double((1 << M) - 1), j) < a) ++j;
    auto on_grid = [&](double v, double* m) {
      double q = std::ldexp(v, -j);
      *m = q;
      return q == std::floor(q) && q <= (1 << M) - 1;
    };
    double mlo, mhi;
    bool glo = on_grid(lo, &mlo), ghi = on_grid(hi, &mhi);
    if (glo && ghi) return s * (std::fmod(mlo, 2) == 0 ? lo : hi);
    return s * (glo ? lo : hi);
  }
};

// log(W, b): nearest in the log domain (|log2|x| − k| smallest) down to 2^kmin; below it, the
// nearer of 0 and 2^kmin in linear distance, a tie going to 0 (code 0).
struct LogOracle {
  ValueSet set;
  explicit LogOracle(int W, int b) { set.build(log_codes(W, b)); }
  double nearest(double x) const {
    if (std::isnan(x)) return x;
    double a = std::abs(x), s = std::signbit(x) ? -1 : 1;
    double pmin = set.min_positive(), pmax = set.max();
    if (a >= pmax) return s * pmax;
    if (a < pmin) return s * (a > pmin / 2 ? pmin : 0.0);
    long double l = std::log2((long double)a);
    double best = pmin;
    long double bestd = INFINITY;
    for (double v : set.values) {
      if (v <= 0) continue;
      long double d = std::abs(l - std::log2((long double)v));
      if (d < bestd) bestd = d, best = v;
    }
    return s * best;
  }
};

// Inputs that probe a sorted value set: every value, every midpoint and the floats just
// above and below them, 0, −0, tiny and huge numbers, ±inf, NaN, and random values.
inline std::vector<float> probe_inputs(const std::vector<double>& values, uint32_t seed, int n_random = 2000) {
  std::vector<float> xs;
  auto add3 = [&](double v) {
    float f = static_cast<float>(v);
    if (!std::isfinite(f)) return;
    xs.push_back(f);
    xs.push_back(std::nextafter(f, INFINITY));
    xs.push_back(std::nextafter(f, -INFINITY));
  };
  for (size_t i = 0; i < values.size(); ++i) {
    add3(values[i]);
    if (i + 1 < values.size()) add3(0.5 * (values[i] + values[i + 1]));
  }
  double mx = values.back();
  for (double v : {0.0, 0x1p-149, 0x1p-126, mx, 2 * mx, 1e30, double(FLT_MAX)}) add3(v), add3(-v);
  xs.push_back(-0.0f);
  xs.push_back(INFINITY);
  xs.push_back(-INFINITY);
  xs.push_back(NAN);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> lin(-1.5 * mx, 1.5 * mx), lg(-150, 128);
  for (int i = 0; i < n_random; ++i) {
    xs.push_back(static_cast<float>(lin(rng)));
    float g = static_cast<float>(std::exp2(lg(rng)));
    xs.push_back(i % 2 ? g : -g);
  }
  return xs;
}

// "0x1.8p-9 (0.00292969)": exact and readable, for failure messages.
inline std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a (%g)", v, v);
  return buf;
}

// Same value, NaN == NaN, and the same sign of zero when `signed_zero`.
inline bool same(double got, double want, bool signed_zero = false) {
  if (std::isnan(want)) return std::isnan(got);
  if (got != want) return false;
  return !signed_zero || got != 0 || std::signbit(got) == std::signbit(want);
}

}  // namespace mase::test
