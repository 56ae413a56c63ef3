// tests/quant/test_codes.cpp — encode / decode of element codes (what mase-quant prints):
// every code decodes as the spec's formula (tests/quant/oracle.h) says, every value f32 holds
// is a fixed point of the quantizer, and encode finds a code that decodes back to it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "oracle.h"
#include "quant/codes.h"
#include "runtime/kernels/quant_block.h"
#include "runtime/kernels/quant_scalar.h"
#include "runtime/error.h"

using namespace mase;
using namespace mase::quant;

namespace {

void check_scalar_codes(const Format& f, const std::vector<test::Coded>& oracle, bool unique_codes) {
  std::vector<float> vals;
  int bad = 0;
  for (const test::Coded& o : oracle) {
    const double v = decode(f, o.code);
    if (!test::same(v, o.value, true)) ++bad;
    if (std::abs(v) > FLT_MAX) continue;  // not part of the f32 set
    std::optional<uint64_t> c = encode(f, v);
    if (!c || decode(f, *c) != v || (unique_codes && *c != o.code)) ++bad;
    vals.push_back(float(v));
  }
  CHECK(bad == 0);
  std::vector<float> q(vals.size());
  cpu::scalar_forward<float>(q.data(), vals.data(), int64_t(vals.size()), f);
  CHECK(q == vals);  // representable values are fixed points
  CHECK(!encode(f, NAN).has_value());
}

}  // namespace

TEST_CASE("codes: scalar formats decode as the spec and round-trip through encode") {
  check_scalar_codes(make_format("integer", {{"width", 6}, {"frac_width", 2}}), test::integer_codes(6, 2), true);
  check_scalar_codes(make_format("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}}),
                     test::minifloat_ieee_codes(8, 4, 7), true);
  check_scalar_codes(make_format("minifloat_ieee", {{"width", 16}, {"exponent_width", 8}}),
                     test::minifloat_ieee_codes(16, 8, 127), true);
  // denorm: several codes share a value, encode picks one that decodes back to it
  check_scalar_codes(make_format("minifloat_denorm", {{"width", 7}, {"exponent_width", 3}}),
                     test::minifloat_denorm_codes(7, 3, 3), false);
  check_scalar_codes(make_format("log", {{"width", 6}, {"exponent_bias", 5}}), test::log_codes(6, 5), true);
  // a value outside the format has no code
  CHECK(!encode(make_format("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}}), 0.7).has_value());
  CHECK(code_bits(make_format("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}}), 0x33) == "0 0110 011");
}

TEST_CASE("codes: MX element tables and block codes") {
  // E4M3: S.1111.111 is NaN, everything else is minifloat_ieee(8, 4, 7); max 448
  Format e4m3 = make_format("mxfp8_e4m3");
  auto t = code_table(e4m3);
  REQUIRE(t.size() == 256);
  for (auto& [c, v] : t) {
    if ((c & 0x7f) == 0x7f) CHECK(std::isnan(*v));
    else CHECK(*v == std::ldexp(test::minifloat_ieee_codes(8, 4, 7)[c].value, 0));
  }
  CHECK(*t[0x7e].second == 448);
  CHECK(code_table(make_format("mxfp4_e2m1")).size() == 16);
  CHECK_THROWS_AS(code_table(make_format("block_fp", {{"width", 4}, {"exponent_width", 3}, {"block_size", 2}})), ConfigError);
  CHECK_THROWS_AS(code_table(make_format("integer", {{"width", 20}})), ConfigError);

  // every output of a block format encodes (given the block's shared parameter) and decodes back
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> lg(-30, 30);
  for (Format f : {make_format("block_fp", {{"width", 5}, {"exponent_width", 8}, {"block_size", 8}}),
                   make_format("block_minifloat", {{"width", 6}, {"exponent_width", 3}, {"exponent_bias_width", 8}, {"block_size", 8}}),
                   make_format("block_log", {{"width", 5}, {"exponent_bias_width", 6}, {"block_size", 8}}),
                   make_format("mxint8"), make_format("mxfp6_e2m3"), make_format("mxfp8_e5m2")}) {
    const int64_t bs = f.block_size;
    std::vector<float> x(bs * 20), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i % 2 ? 1 : -1) * std::exp2(lg(rng) / (1 + int(i / bs) % 5)));
    cpu::block_forward<float>(y.data(), x.data(), 20, bs, f);
    int bad = 0;
    for (int64_t b = 0; b < 20; ++b) {
      const int shared = cpu::block_shared_param(x.data() + b * bs, bs, f);
      for (int64_t i = b * bs; i < (b + 1) * bs; ++i) {
        std::optional<uint64_t> c = encode(f, y[i], shared);
        if (!c || decode(f, *c, shared) != y[i]) ++bad;
      }
    }
    INFO(f.str());
    CHECK(bad == 0);
  }
}
