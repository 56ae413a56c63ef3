// quant/codes.h — the bit codes behind the values: encode / decode one element of a format.
//
// The kernels never need codes (fake quantization stores values), but a student asking "what
// does 0.7 become in E4M3?" wants the bits too, and --table lists every code of a format. So
// this file is the format definitions of formats.md written as decoders, plus their inverse:
//   integer           two's complement k, value k·2^−f
//   minifloat_ieee    sign | exponent c | mantissa m: c = 0: 2^(1−b)·m/2^M, else 2^(c−b)·(1+m/2^M)
//   minifloat_denorm  sign | c | m: 2^(c−b)·m/2^M (several codes can share a value; encode
//                     picks the finest grid, i.e. the smallest c)
//   log               sign | c: c = 0 is zero, else 2^(c−b)
//   block formats     the element code, given the block's shared parameter (quant_block.h)
//   mxint8            the int8 q; mxfp*: the OCP element code (E4M3, E5M2, E3M2, E2M3, E2M1)
//   binary            1 bit: 1 = +, 0 = − (or 0); ternary: 2 bits, 00 = 0, 01 = +, 11 = −
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quant/format.h"

namespace mase::quant {

// Bit fields of one element code, most significant first, e.g. {1, 4, 3} for E4M3
// (sign, exponent, mantissa) or {8} for an integer of width 8.
std::vector<int> code_fields(const Format& f);
int code_width(const Format& f);  // sum of the fields

// `shared` is the block's shared parameter for block formats (block_shared_param), else unused.
double decode(const Format& f, uint64_t code, int shared = 0);
// The code of a representable value (an output of the quantizer); nullopt for NaN or a value
// the format does not hold.
std::optional<uint64_t> encode(const Format& f, double value, int shared = 0);

// The shared parameter of one block of a block format, as the formats define it (a shared
// exponent or bias; the E8M0 scale for MX): what `shared` above is for that block.
int block_shared_param(const float* x, int64_t n, const Format& f);

// "0 0101 110": the code's bits, a space between fields.
std::string code_bits(const Format& f, uint64_t code);

// Every code of a scalar format (or of an MX element format, unscaled) with its value, in code
// order; values f32 cannot hold are reported as nullopt (an infinity code, E5M2's, is ±inf,
// which f32 holds, though the quantizer never produces it: it saturates). ConfigError for a block or sign
// format, or a code space above 2^16.
std::vector<std::pair<uint64_t, std::optional<double>>> code_table(const Format& f);

}  // namespace mase::quant
