// tests/quant/test_scalar.cpp — the scalar formats against exhaustive brute-force oracles
// (tests/quant/oracle.h), plus MASE's documented integer cases and hand-checked values.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "oracle.h"
#include "quant/format.h"
#include "runtime/kernels/quant_scalar.h"

using namespace mase;
using namespace mase::quant;
using mase::test::same;

namespace test_scalar {

namespace {

Format fmt(const char* name, nlohmann::json params) { return make_format(name, params); }

// Runs the kernel on f32 and on f64 (same inputs) and returns both outputs.
std::pair<std::vector<float>, std::vector<double>> run_both(const Format& f, const std::vector<float>& xs) {
  std::vector<float> y(xs.size());
  cpu::scalar_forward<float>(y.data(), xs.data(), int64_t(xs.size()), f);
  std::vector<double> xd(xs.begin(), xs.end()), yd(xs.size());
  cpu::scalar_forward<double>(yd.data(), xd.data(), int64_t(xd.size()), f);
  return {y, yd};
}

// Compares the kernel with `want(x)` on every probe input; sign-magnitude formats also keep
// the sign of x on a zero result.
template <class Want>
void check_format(const Format& f, const std::vector<float>& xs, Want want, bool sign_magnitude) {
  auto [y, yd] = run_both(f, xs);
  int bad = 0;
  for (size_t i = 0; i < xs.size() && bad < 5; ++i) {
    double w = want(double(xs[i]));
    bool ok = same(y[i], w) && same(yd[i], w);
    if (ok && sign_magnitude && !std::isnan(xs[i]))
      ok = std::signbit(y[i]) == std::signbit(xs[i]) && std::signbit(yd[i]) == std::signbit(xs[i]);
    if (ok && !sign_magnitude && w == 0) ok = !std::signbit(y[i]) && !std::signbit(yd[i]);
    if (!ok) {
      ++bad;
      INFO(f.str() << ": x = " << test::hex(xs[i]) << " -> f32 " << test::hex(y[i]) << ", f64 "
                   << test::hex(yd[i]) << ", oracle " << test::hex(w));
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("integer: MASE-identical documented cases at width 8 frac 4") {
  Format f = fmt("integer", {{"width", 8}, {"frac_width", 4}});
  std::vector<float> xs = {0.03125f, 0.09375f, 100.f, -100.f};
  auto [y, yd] = run_both(f, xs);
  // 0.03125·16 = 0.5 -> RNE 0; 0.09375·16 = 1.5 -> 2 -> 2/16; 100·16 -> clamp 127 -> 127/16;
  // −100·16 -> clamp −128 -> −8
  CHECK(y == std::vector<float>{0.f, 0.125f, 7.9375f, -8.f});
  CHECK(yd == std::vector<double>{0.0, 0.125, 7.9375, -8.0});
}

TEST_CASE("integer: exhaustive oracle over several widths") {
  for (auto [w, fr] : std::vector<std::pair<int, int>>{{8, 4}, {2, 1}, {4, 0}, {3, 3}, {12, 5}, {16, 8}}) {
    test::ValueSet set;
    set.build(test::integer_codes(w, fr));
    Format f = fmt("integer", {{"width", w}, {"frac_width", fr}});
    check_format(f, test::probe_inputs(set.values, w), [&](double x) { return set.nearest(x); }, false);
  }
}

TEST_CASE("integer: widths above 25 bits take the f64 path and stay RNE") {
  // k·2^−f with |k| up to 2^27 is not exact in f32 for every k; the oracle is the rule itself
  Format f = fmt("integer", {{"width", 28}, {"frac_width", 10}});
  std::vector<float> xs = {0x1p-11f, 3 * 0x1p-11f, 1.0f + 0x1p-11f, 131071.99f, 131072.f, -131072.f,
                           -131073.f, 1e9f, -1e9f, 12345.678f};
  auto [y, yd] = run_both(f, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    double k = std::nearbyint(double(xs[i]) * 1024.0);
    k = std::clamp(k, -134217728.0, 134217727.0);
    CHECK(y[i] == float(k / 1024.0));
    CHECK(yd[i] == k / 1024.0);
  }
}

TEST_CASE("minifloat_ieee: hand-checked E4M3 values") {
  Format f = fmt("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}});
  // bias 7, 3 mantissa bits: max = 2^8·1.875 = 480; binade [1,2) has spacing 1/8.
  // 1.97 -> 2.0 (carries into the next binade; MASE returned 1.875), 0.7 -> 0.6875 (=1.375/2),
  // 1000 -> 480 (saturate), smallest subnormal 2^(1−7)·1/8 = 2^−9, its half 2^−10 -> 0 (even)
  std::vector<float> xs = {1.97f, 0.7f, 1000.f, -1000.f, 0x1p-9f, 0x1p-10f, 0x1.8p-9f, 1.0625f, 1.1875f};
  auto [y, yd] = run_both(f, xs);
  CHECK(y == std::vector<float>{2.0f, 0.6875f, 480.f, -480.f, 0x1p-9f, 0.f, 0x1p-8f, 1.0f, 1.25f});
}

TEST_CASE("minifloat_ieee: exhaustive oracle over several settings") {
  struct S { int W, E, b; };
  // (4,3,2) and (5,4,7) have no mantissa bits: ties follow the parity of the exponent code;
  // (16,8,127) is bf16 without inf/NaN (its top binade lies beyond f32 and is dropped);
  // (12,8,135) puts 2^emin below f32's normal range: the f64 fallback path
  for (S s : {S{8, 4, 7}, S{8, 5, 15}, S{6, 3, 3}, S{4, 2, 1}, S{4, 3, 2}, S{5, 4, 7}, S{3, 1, 0},
              S{8, 4, 0}, S{8, 4, 12}, S{16, 8, 127}, S{12, 8, 135}, S{7, 2, -3}}) {
    test::ValueSet set;
    set.build(test::minifloat_ieee_codes(s.W, s.E, s.b));
    Format f = fmt("minifloat_ieee", {{"width", s.W}, {"exponent_width", s.E}, {"exponent_bias", s.b}});
    check_format(f, test::probe_inputs(set.values, s.W), [&](double x) { return set.nearest(x); }, true);
  }
}

TEST_CASE("minifloat_denorm: exact powers of two stay put and the exhaustive oracle agrees") {
  Format e4m3 = fmt("minifloat_denorm", {{"width", 8}, {"exponent_width", 4}});
  auto [y, yd] = run_both(e4m3, {1.0f, 0.5f, 2.0f, 0.875f});
  CHECK(y == std::vector<float>{1.0f, 0.5f, 2.0f, 0.875f});  // MASE mapped 1.0 to 0.875
  struct S { int W, E, b; };
  // (4,2,1) has one mantissa bit (values 2^j only); (16,8,127) takes the f64 path
  for (S s : {S{8, 4, 7}, S{8, 3, 3}, S{5, 2, 1}, S{4, 2, 1}, S{6, 3, 2}, S{7, 3, 0}, S{16, 8, 127}}) {
    test::DenormOracle oracle(s.W, s.E, s.b);
    Format f = fmt("minifloat_denorm", {{"width", s.W}, {"exponent_width", s.E}, {"exponent_bias", s.b}});
    check_format(f, test::probe_inputs(oracle.set.values, s.W), [&](double x) { return oracle.nearest(x); }, true);
  }
}

TEST_CASE("log: exhaustive oracle and the zero rule") {
  Format l8 = fmt("log", {{"width", 4}, {"exponent_bias", 3}});
  // values 0, 2^−2 .. 2^4; 2^−3 is the tie between 0 and 2^−2 -> 0; 1.5 -> 2 (1.5 > √2);
  // 1.4 -> 1 (1.4 < √2); 100 -> 16 (saturate)
  auto [y, yd] = run_both(l8, {0x1p-3f, 0x1.0001p-3f, 1.5f, 1.4f, 100.f, -0.3f});
  CHECK(y == std::vector<float>{0.f, 0.25f, 2.f, 1.f, 16.f, -0.25f});
  struct S { int W, b; };
  // (12, 1023) is the default bias of width 12: only its powers within f32 are kept;
  // (5, 140) puts 2^kmin below f32's normal range: the f64 path
  for (S s : {S{8, 63}, S{4, 3}, S{6, 0}, S{3, 1}, S{12, 1023}, S{5, 140}, S{7, -20}}) {
    test::LogOracle oracle(s.W, s.b);
    std::vector<float> xs = test::probe_inputs(oracle.set.values, s.W, 500);
    for (double v : oracle.set.values)  // the geometric midpoints and their neighbours
      if (v > 0) {
        float g = float(v * std::sqrt(2.0));
        for (float h : {g, std::nextafter(g, 0.f), std::nextafter(g, INFINITY)}) xs.push_back(h), xs.push_back(-h);
      }
    Format f = fmt("log", {{"width", s.W}, {"exponent_bias", s.b}});
    check_format(f, xs, [&](double x) { return oracle.nearest(x); }, true);
  }
}

}  // namespace test_scalar
