// tests/quant/test_mase_compat.cpp — "compat": "mase": MASE's own quantizer formulas
// (src/chop/nn/quantizers/{integer,minifloat,log}.py), checked on values worked out by hand
// from those formulas, each one where MASE and the default rule differ (and a few where they
// agree). The arithmetic is in the comments; docs/formats.md tables the same differences.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "helpers.h"
#include "quant/format.h"
#include "runtime/kernels/quant_scalar.h"

using namespace mase;
using namespace mase::quant;

namespace {

// The kernel on f32 inputs with compat on (mase = true) or off.
std::vector<float> run(const char* name, nlohmann::json params, const std::vector<float>& xs,
                       bool mase) {
  if (mase) params["compat"] = "mase";
  const Format f = make_format(name, params);
  CHECK(f.mase_compat == mase);
  std::vector<float> y(xs.size());
  cpu::scalar_forward<float>(y.data(), xs.data(), int64_t(xs.size()), f);
  return y;
}

const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("mase compat: integer keeps -0 and otherwise equals the default") {
  const nlohmann::json p = {{"width", 8}, {"frac_width", 4}};
  // round(-0.01·16 = -0.16) = -0 in MASE (torch.round keeps the sign); +0 by default
  std::vector<float> xs = {-0.01f, 0.03f, 1.03125f, 1000.0f, -kInf};
  auto m = run("integer", p, xs, true), d = run("integer", p, xs, false);
  CHECK(m[0] == 0.0f);
  CHECK(std::signbit(m[0]));
  CHECK(!std::signbit(d[0]));
  CHECK(m[1] == 0.0f);      // round(0.48) = 0
  CHECK(m[2] == 1.0f);      // round(16.5) = 16 (ties to even) -> 1.0
  CHECK(m[3] == 7.9375f);   // clamp(16000, -128, 127) = 127 -> 127/16
  CHECK(m[4] == -8.0f);     // -inf saturates: clamp -> -128 -> -8
  for (size_t i = 1; i < xs.size(); ++i) CHECK(m[i] == d[i]);
}

TEST_CASE("mase compat: minifloat_ieee E4M3") {
  const nlohmann::json p = {{"width", 8}, {"exponent_width", 4}};  // M = 3, b = 7: e in -7..8
  std::vector<float> xs = {1.97f, 5e-9f, 0.0155f, kInf, 1000.0f, 0.0f};
  auto m = run("minifloat_ieee", p, xs, true), d = run("minifloat_ieee", p, xs, false);
  // 1.97: e = floor(log2 1.97) = 0, round(1.97·8 − 8 = 7.76) = 8, clamp 7 -> 1 + 7/8 = 1.875
  // (no carry into the next binade); the default rounds to 2
  CHECK(m[0] == 1.875f);
  CHECK(d[0] == 2.0f);
  // |x| <= 1e-8 (torch.isclose to 0) passes through unchanged; the default rounds it to 0
  CHECK(m[1] == 5e-9f);
  CHECK(d[1] == 0.0f);
  // 0.0155: e = floor(log2 0.0155) = -7 = -b, MASE's "subnormal" branch: mantissa 0.0155·2^7
  // = 1.984, round(1.984·8/2 = 7.936) = 8, clamp 7 -> 7/8·2·2^-7 = 0.013671875; by default the
  // grid there is 2^-9 and 7.936 -> 8 gives 2^-6 = 0.015625
  CHECK(m[2] == 0.013671875f);
  CHECK(d[2] == 0.015625f);
  // inf: a finite saturated value, then 0·inf in MASE's pass-through blend: NaN
  CHECK(std::isnan(m[3]));
  CHECK(d[3] == 480.0f);
  // 1000: e = floor(log2 1000) = 9, clamp 8, mantissa 3.906, round(23.25) = 23, clamp 7 -> 480
  CHECK(m[4] == 480.0f);
  CHECK(d[4] == 480.0f);
  CHECK(m[5] == 0.0f);
}

TEST_CASE("mase compat: minifloat_denorm maps a power of two down") {
  const nlohmann::json p = {{"width", 8}, {"exponent_width", 4}};  // M = 3, b = 7
  std::vector<float> xs = {1.0f, 0.75f, -0.3f};
  auto m = run("minifloat_denorm", p, xs, true), d = run("minifloat_denorm", p, xs, false);
  // 1.0: e = ceil(log2(1 + 1e-9)) = 0 (1 + 1e-9 is 1 in f32), round(1·8) = 8, clamp 7 -> 0.875
  CHECK(m[0] == 0.875f);
  CHECK(d[0] == 1.0f);
  // 0.75: e = ceil(-0.415) = 0, round(0.75·8) = 6 -> 0.75 (both)
  CHECK(m[1] == 0.75f);
  CHECK(d[1] == 0.75f);
  // -0.3: e = ceil(log2 0.3 = -1.74) = -1, mantissa 0.6, round(4.8) = 5 -> -5/8·2^-1 = -0.3125
  CHECK(m[2] == -0.3125f);
  CHECK(d[2] == -0.3125f);
}

TEST_CASE("mase compat: log has no zero code") {
  const nlohmann::json p = {{"width", 4}};  // b = 3: MASE's powers 2^-3..2^4, ours 0 and 2^-2..2^4
  std::vector<float> xs = {0.0f, 0.03125f, 0.09f, -3.0f, 100.0f, 2.9f};
  auto m = run("log", p, xs, true), d = run("log", p, xs, false);
  // 0 and 0.03125: |x| + 0.1·2^-3, log2 rounds to -5 or so, clamp to -3 -> 0.125; default 0
  CHECK(m[0] == 0.125f);
  CHECK(m[1] == 0.125f);
  CHECK(d[0] == 0.0f);
  CHECK(d[1] == 0.0f);
  // 0.09: round(log2(0.1025) = -3.29) = -3 -> 0.125; default: below 2^-2, nearer to 0 -> 0
  CHECK(m[2] == 0.125f);
  CHECK(d[2] == 0.0f);
  // -3: round(log2 3.0125 = 1.59) = 2 -> -4; 100 -> clamp 4 -> 16; 2.9 -> 4 (both agree)
  CHECK(m[3] == -4.0f);
  CHECK(m[4] == 16.0f);
  CHECK(m[5] == 4.0f);
  CHECK(d[3] == -4.0f);
  CHECK(d[4] == 16.0f);
  CHECK(d[5] == 4.0f);
}

TEST_CASE("mase compat: configs") {
  // one key for the whole layer, printed with the format
  const LinearQuantConfig c = parse_linear_config(
      {{"name", "integer"}, {"compat", "mase"}, {"data_in_width", 8}, {"data_in_frac_width", 4},
       {"weight_width", 8}, {"weight_frac_width", 4}, {"bias_width", 8}, {"bias_frac_width", 4}},
      "l");
  CHECK(c.weight.mase_compat);
  CHECK(c.data_in.str() == "integer(width=8, frac_width=4, compat=mase)");
  const nlohmann::json w8 = {{"width", 8}, {"frac_width", 4}};
  nlohmann::json dflt = w8, bad = w8;
  dflt["compat"] = "mase-cpp";
  bad["compat"] = "torch";
  CHECK(!make_format("integer", dflt).mase_compat);
  CHECK(test::error_message([&] { make_format("integer", bad); }) ==
        "[quant] format: expected \"compat\": \"mase\" or \"mase-cpp\", got torch");
  CHECK_THROWS_AS(make_format("block_fp", {{"compat", "mase"}}), ConfigError);
  CHECK_THROWS_AS(make_format("ternary", {{"compat", "mase"}}), ConfigError);
}
