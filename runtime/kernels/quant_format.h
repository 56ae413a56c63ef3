// runtime/kernels/quant_format.h — a number format as the quantization kernels see it: its kind
// and its parameters, plain data.
//
// The kernels that take a format (runtime/cpu/quant_scalar.cpp, quant_block.cpp and their CUDA
// twins) read only these fields. Parsing MASE's config keys, printing and validating a format
// are quant/'s business: quant::Format (quant/format.h) is this struct plus those methods.
#pragma once
#include <cstdint>

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

constexpr bool is_scalar(Kind k) {  // integer, minifloat_ieee, minifloat_denorm, log
  return k == Kind::integer || k == Kind::minifloat_ieee || k == Kind::minifloat_denorm ||
         k == Kind::log;
}
constexpr bool is_block(Kind k) { return k >= Kind::block_fp; }  // block_*, mxint8, mxfp*
constexpr bool is_mx(Kind k) { return k >= Kind::mxint8; }  // OCP MX: blocks of 32, E8M0 scale
constexpr bool uses_clipped_ste(Kind k) {  // binary, binary_scaling, binary_residual, ternary
  return k == Kind::binary || k == Kind::binary_scaling || k == Kind::binary_residual ||
         k == Kind::ternary;
}

struct FormatParams {
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
  // "compat": "mase" — MASE's own formulas, step by step in float arithmetic, instead of the
  // nearest-value rule (integer, minifloat_ieee, minifloat_denorm, log only; docs/formats.md
  // tables every difference). For matching the course's numbers, not for new work.
  bool mase_compat = false;
};

}  // namespace mase::quant
