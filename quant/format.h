// quant/format.h — what a number format is: its kind and parameters, parsed from MASE keys.
//
// A Format names one entry of ../shared/specs/formats.md (docs/formats.md explains each with
// examples) plus its parameters. It is plain data: the kernels (quant/kernels/) and the autograd
// op (quant/quantize.h) read it, mase-quant prints it, and QuantizedLinear will hold four of them.
//
// Configs use MASE's key names. One tensor's format reads `name` and `<prefix><param>`:
//   {"name": "minifloat_ieee", "weight_width": 8, "weight_exponent_width": 4}
//   parse_format(cfg, "weight_")  ->  minifloat_ieee(width=8, exponent_width=4, exponent_bias=7)
// A whole Linear's config (data_in_ / weight_ / bias_ / optional data_out_, or "bypass": true)
// goes through parse_linear_config, which also rejects unknown keys and keys the format does
// not take. Every problem is a ConfigError naming the layer and the key.
//
// Read next: quant/kernels/scalar.h (how each scalar format rounds), quant/quantize.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mase::quant {

enum class Kind : uint8_t {
  // scalar formats: every element on its own
  integer, minifloat_ieee, minifloat_denorm, log,
  // sign formats: {−1, +1} or {−α, 0, +α}, α per row of the last dim; clipped STE
  binary, binary_scaling, binary_residual, ternary,
  // block formats: a shared exponent or bias per block of the last dim
  block_fp, block_minifloat, block_log, mxint8,
  mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1,
};

std::string_view kind_name(Kind k);              // "minifloat_ieee"
std::optional<Kind> kind_from_name(std::string_view name);  // also accepts the alias "fixed"
const std::vector<Kind>& all_kinds();

bool is_scalar(Kind k);  // integer, minifloat_ieee, minifloat_denorm, log
bool is_block(Kind k);   // block_*, mxint8, mxfp*
bool is_mx(Kind k);      // mxint8, mxfp*: OCP MX, blocks of 32, E8M0 scale
bool uses_clipped_ste(Kind k);  // binary, binary_scaling, binary_residual, ternary

struct Format {
  Kind kind = Kind::integer;
  int width = 8;
  int frac_width = 4;
  int exponent_width = 0;
  int exponent_bias = 0;
  int exponent_bias_width = 0;
  int block_size = 0;
  int levels = 2;          // binary_residual: number of residual sign levels
  bool stochastic = false; // binary, binary_scaling
  bool bipolar = true;     // binary, binary_scaling: {−1,+1} (true) or {0,+1} (false)
  bool scaling = false;    // ternary: {−α,0,α} (true) or {−1,0,1} (false)

  // "minifloat_ieee(width=8, exponent_width=4, exponent_bias=7)"
  std::string str() const;
  // The parameter keys this kind takes, without prefix, e.g. {"width", "frac_width"}.
  static const std::vector<std::string>& keys(Kind k);
  // Bits per element of the stored format (block formats include their share of the scale):
  // integer 8 -> 8, mxint8 -> 8.25, binary -> 1, ternary -> log2(3) rounded up to 2.
  double bits_per_element() const;
  // Throws ConfigError "[quant] <where>: expected <prefix>width in 1..32, got 40" and the like.
  void validate(std::string_view where = "format", std::string_view prefix = "") const;
};

// Reads `name` and `<prefix><key>` for the keys of that kind (defaults for the optional ones),
// then validates. Keys of other tensors or unknown keys are not looked at here.
Format parse_format(const nlohmann::json& cfg, std::string_view prefix = "",
                    std::string_view where = "format");
// The same from a name and a prefix-free object, e.g. from mase-quant's flags.
Format make_format(std::string_view name, const nlohmann::json& params,
                   std::string_view where = "format");
Format make_format(std::string_view name);  // with every parameter at its default

// The config of one quantized Linear: y = Q_out(Q_in(x) · Q_w(W)ᵀ + Q_b(b)).
struct LinearQuantConfig {
  bool bypass = false;              // a plain Linear ("bypass": true or "name": null)
  Format data_in, weight, bias;
  std::optional<Format> data_out;   // present when any data_out_* key is given
};

// Validates the whole object: `name` required (null = bypass), every key known and taken by
// the format, required keys present. `layer` names the module in messages.
LinearQuantConfig parse_linear_config(const nlohmann::json& cfg, std::string_view layer);

}  // namespace mase::quant
