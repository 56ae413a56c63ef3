// tests/quant/test_config.cpp — formats from MASE-style configs, and every ConfigError.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "quant/format.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

TEST_CASE("parse_linear_config: a MASE integer config and its defaults") {
  json cfg = {{"name", "integer"}, {"data_in_width", 8}, {"data_in_frac_width", 4},
              {"weight_width", 6}, {"weight_frac_width", 3}, {"bias_width", 10}};
  LinearQuantConfig c = parse_linear_config(cfg, "bert.encoder.layer.0.attention.self.query");
  CHECK(!c.bypass);
  CHECK(c.data_in.kind == Kind::integer);
  CHECK(c.data_in.str() == "integer(width=8, frac_width=4)");
  CHECK(c.weight.str() == "integer(width=6, frac_width=3)");
  CHECK(c.bias.frac_width == 5);  // default width/2
  CHECK(!c.data_out.has_value());
  cfg["data_out_width"] = 16;
  CHECK(parse_linear_config(cfg, "l").data_out->width == 16);
  // the caller's object is read, never changed
  CHECK(cfg.size() == 7);
}

TEST_CASE("parse_linear_config: bypass, name null, aliases and defaults of other formats") {
  CHECK(parse_linear_config({{"bypass", true}, {"name", "integer"}}, "l").bypass);
  CHECK(parse_linear_config({{"name", nullptr}}, "l").bypass);
  LinearQuantConfig f = parse_linear_config(
      {{"name", "fixed"}, {"data_in_width", 8}, {"weight_width", 8}, {"bias_width", 8}}, "l");
  CHECK(f.weight.kind == Kind::integer);
  LinearQuantConfig m = parse_linear_config(
      {{"name", "minifloat_ieee"}, {"data_in_width", 8}, {"data_in_exponent_width", 4},
       {"weight_width", 8}, {"weight_exponent_width", 5}, {"weight_exponent_bias", 10},
       {"bias_width", 8}, {"bias_exponent_width", 4}}, "l");
  CHECK(m.data_in.exponent_bias == 7);  // 2^(E−1) − 1
  CHECK(m.weight.exponent_bias == 10);
  LinearQuantConfig b = parse_linear_config({{"name", "binary"}, {"weight_stochastic", true}}, "l");
  CHECK(b.weight.stochastic);
  CHECK(!b.data_in.stochastic);
  CHECK(b.data_in.bipolar);
  // MASE's list form of a block size: the last entry is the block length along the last dim
  LinearQuantConfig bf = parse_linear_config(
      {{"name", "block_fp"}, {"data_in_width", 8}, {"data_in_exponent_width", 8}, {"data_in_block_size", {1, 16}},
       {"weight_width", 8}, {"weight_exponent_width", 8}, {"weight_block_size", 16},
       {"bias_width", 8}, {"bias_exponent_width", 8}, {"bias_block_size", 16}}, "l");
  CHECK(bf.data_in.block_size == 16);
  CHECK(bf.data_in.exponent_bias == 127);
  CHECK(make_format("log", {{"width", 8}}).exponent_bias == 63);  // 2^(W−2) − 1
  CHECK(make_format("mxint8", nullptr).block_size == 32);
  CHECK(make_format("mxint8", nullptr).bits_per_element() == 8.25);
}

TEST_CASE("config errors name the layer and the key") {
  auto msg = [](const json& cfg) { return test::error_message([&] { parse_linear_config(cfg, "fc1"); }); };
  json ok = {{"name", "integer"}, {"data_in_width", 8}, {"weight_width", 8}, {"bias_width", 8}};
  auto with = [&](const char* k, json v) { json c = ok; c[k] = v; return c; };
  auto without = [&](const char* k) { json c = ok; c.erase(k); return c; };

  CHECK(msg(without("weight_width")) ==
        "[quant] layer 'fc1': missing required key 'weight_width' for integer (it takes: width, frac_width)");
  CHECK(msg(with("weight_widht", 8)).find("unknown key 'weight_widht'") != std::string::npos);
  CHECK(msg(with("weight_exponent_width", 4)) ==
        "[quant] layer 'fc1': key 'weight_exponent_width' is not a parameter of integer (it takes: width, frac_width)");
  CHECK(msg(with("weight_width", 33)) == "[quant] layer 'fc1': expected weight_width in 1..32, got 33");
  CHECK(msg(with("data_in_width", 0)) == "[quant] layer 'fc1': expected data_in_width in 1..32, got 0");
  CHECK(msg(with("bias_frac_width", 9)) ==
        "[quant] layer 'fc1': expected bias_frac_width <= bias_width, got 9 > 8");
  CHECK(msg(with("name", "int")).find("unknown format name 'int'") != std::string::npos);
  CHECK(msg(without("name")).find("missing required key 'name'") != std::string::npos);
  CHECK(msg(with("weight_width", "8")).find("expected weight_width to be an integer") != std::string::npos);
  CHECK(msg(with("weight_width", 7.5)).find("expected weight_width to be an integer") != std::string::npos);

  json blk = {{"name", "block_minifloat"}, {"data_in_width", 8}, {"data_in_exponent_width", 4},
              {"data_in_exponent_bias_width", 4}, {"data_in_block_size", 0}};
  CHECK(test::error_message([&] { parse_format(blk, "data_in_", "fc1"); }) ==
        "[quant] fc1: expected data_in_block_size in 1..1048576, got 0");
  blk["data_in_block_size"] = 16;
  blk.erase("data_in_exponent_bias_width");
  CHECK_THROWS_AS(parse_format(blk, "data_in_", "fc1"), ConfigError);

  // ranges that f32 storage imposes, with the reason in the message
  CHECK(test::error_message([] { make_format("minifloat_ieee", {{"width", 32}, {"exponent_width", 4}}); })
            .find("leaves 27 mantissa bits") != std::string::npos);
  CHECK_THROWS_AS(make_format("minifloat_ieee", {{"width", 8}, {"exponent_width", 9}}), ConfigError);
  CHECK_THROWS_AS(make_format("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}, {"exponent_bias", 200}}), ConfigError);
  CHECK_THROWS_AS(make_format("minifloat_denorm", {{"width", 5}, {"exponent_width", 4}}), ConfigError);
  CHECK_THROWS_AS(make_format("integer", {{"width", 1}}), ConfigError);
  CHECK_THROWS_AS(make_format("integer", {{"width", 8}, {"frac_width", -1}}), ConfigError);
  CHECK_THROWS_AS(make_format("log", {{"width", 4}, {"exponent_bias", 300}}), ConfigError);
  // block_fp's bias: −127..2^E + 150 − W (test_block.cpp checks what each end means)
  json bfp = {{"name", "block_fp"}, {"weight_width", 8}, {"weight_exponent_width", 8}, {"weight_block_size", 16}};
  auto bfp_bias = [&](int b) { json c = bfp; c["weight_exponent_bias"] = b; return parse_format(c, "weight_", "fc1"); };
  CHECK(bfp_bias(-127).exponent_bias == -127);
  CHECK(bfp_bias(398).exponent_bias == 398);  // 256 + 150 − 8
  CHECK(test::error_message([&] { bfp_bias(399); }) ==
        "[quant] fc1: expected weight_exponent_bias in -127..398, got 399 (a lower bias rounds f32's "
        "largest values to inf, a higher one saturates every block to a value finer than f32's 2^-149)");
  CHECK(test::error_message([&] { bfp_bias(-128); }).starts_with(
        "[quant] fc1: expected weight_exponent_bias in -127..398, got -128 ("));
  CHECK_THROWS_AS(bfp_bias(100000), ConfigError);
  CHECK_THROWS_AS(bfp_bias(-100000), ConfigError);
  CHECK_THROWS_AS(make_format("block_fp", {{"width", 4}, {"exponent_width", 3}, {"exponent_bias", 155},
                                           {"block_size", 8}}), ConfigError);  // 8 + 150 − 4 = 154
  CHECK_NOTHROW(make_format("block_fp", {{"width", 4}, {"exponent_width", 3}, {"exponent_bias", 154},
                                         {"block_size", 8}}));
  CHECK_THROWS_AS(make_format("binary_residual", {{"levels", 0}}), ConfigError);
  CHECK_THROWS_AS(make_format("mxint8", {{"block_size", 16}}), ConfigError);
  CHECK_THROWS_AS(make_format("binary", {{"stochastic", "yes"}}), ConfigError);
  CHECK_THROWS_AS(parse_linear_config(json::array(), "fc1"), ConfigError);
}
