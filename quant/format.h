// quant/format.h — what a number format is: its kind and parameters, parsed from MASE keys.
//
// A Format names one entry of ../shared/specs/formats.md (docs/formats.md explains each with
// examples) plus its parameters. It is plain data: the kernels (runtime/kernels/quant_*.h) and
// the autograd op (quant/quantize.h) read it, mase-quant prints it, and a QuantizedLinear holds
// three or four of them (LinearQuantConfig, below).
//
// Configs use MASE's key names. One tensor's format reads `name` and `<prefix><param>`:
//   {"name": "minifloat_ieee", "weight_width": 8, "weight_exponent_width": 4}
//   parse_format(cfg, "weight_")  ->  minifloat_ieee(width=8, exponent_width=4, exponent_bias=7)
// A whole Linear's config (data_in_ / weight_ / bias_ / optional data_out_, or "bypass": true)
// goes through parse_linear_config, which also rejects unknown keys and keys the format does
// not take. Every problem is a ConfigError naming the layer and the key.
//
// Read next: runtime/kernels/quant_scalar.h (how each scalar format rounds), quant/quantize.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/kernels/quant_format.h"

namespace mase::quant {


std::string_view kind_name(Kind k);              // "minifloat_ieee"
std::optional<Kind> kind_from_name(std::string_view name);  // also accepts the alias "fixed"
const std::vector<Kind>& all_kinds();


// The kernels see a format as its plain FormatParams (runtime/kernels/quant_format.h); a Format
// adds what the quant layer does with one: print, list its keys, count its bits, validate.
struct Format : FormatParams {

  // "minifloat_ieee(width=8, exponent_width=4, exponent_bias=7)"
  std::string str() const;
  // The parameter keys this kind takes, without prefix, e.g. {"width", "frac_width"}.
  static const std::vector<std::string>& keys(Kind k);
  // Bits per element of the stored format (block formats include their share of the scale):
  // integer 8 -> 8, mxint8 -> 8.25, binary -> 1, ternary -> log2(3) rounded up to 2,
  // binary_residual -> levels (its activation form; its weight form |γ|·sign(w) is 1 bit).
  double bits_per_element() const;
  // The same for a weight: binary_residual's weight form |γ|·sign(w) is 1 bit (Lab 3's
  // average bits per weight).
  double weight_bits_per_element() const {
    return kind == Kind::binary_residual ? 1 : bits_per_element();
  }
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
