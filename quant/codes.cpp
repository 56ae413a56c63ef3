// quant/codes.cpp — decoders and encoders of element codes (see codes.h). Encoders compute a
// candidate code from the value's exponent and mantissa and keep it only if it decodes back to
// exactly that value, so a value the format does not hold gets nullopt, never a wrong code.
#include "quant/codes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "runtime/error.h"
#include "runtime/kernels/quant_block.h"

namespace mase::quant {
namespace {

struct Minifloat {
  int E, M, b;
};

// The element layout of each MX float format (OCP MX v1.0).
Minifloat mx_element(Kind k) {
  switch (k) {
    case Kind::mxfp8_e4m3: return {4, 3, 7};
    case Kind::mxfp8_e5m2: return {5, 2, 15};
    case Kind::mxfp6_e3m2: return {3, 2, 3};
    case Kind::mxfp6_e2m3: return {2, 3, 1};
    default: return {2, 1, 1};
  }
}

uint64_t mask(int bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

double ieee_decode(uint64_t code, Minifloat m) {
  const uint64_t man = code & mask(m.M), c = (code >> m.M) & mask(m.E);
  const bool neg = (code >> (m.E + m.M)) & 1;
  const double v = c == 0 ? std::ldexp(double(man), 1 - m.b - m.M)
                          : std::ldexp(1.0 + std::ldexp(double(man), -m.M), int(c) - m.b);
  return neg ? -v : v;
}

double denorm_decode(uint64_t code, Minifloat m) {
  const uint64_t man = code & mask(m.M), c = (code >> m.M) & mask(m.E);
  const double v = std::ldexp(double(man), int(c) - m.b - m.M);
  return (code >> (m.E + m.M)) & 1 ? -v : v;
}

double log_decode(uint64_t code, int W, int64_t b) {
  const uint64_t c = code & mask(W - 1);
  const double v = c == 0 ? 0.0 : std::ldexp(1.0, int(std::clamp<int64_t>(int64_t(c) - b, -5000, 5000)));
  return (code >> (W - 1)) & 1 ? -v : v;
}

uint64_t sign_bit(double v, int pos) { return std::signbit(v) ? uint64_t(1) << pos : 0; }

std::optional<uint64_t> ieee_encode(double v, Minifloat m) {
  const double a = std::abs(v);
  const uint64_t s = sign_bit(v, m.E + m.M);
  if (a == 0) return s;
  const int emin = 1 - m.b;
  uint64_t c, man;
  if (a < std::ldexp(1.0, emin)) {
    c = 0, man = uint64_t(std::ldexp(a, m.M - emin));
  } else {
    const int e = std::ilogb(a);
    c = uint64_t(e + m.b), man = uint64_t(std::ldexp(a, m.M - e)) - (uint64_t(1) << m.M);
  }
  if (c > mask(m.E) || man > mask(m.M)) return std::nullopt;
  return s | (c << m.M) | man;
}

std::optional<uint64_t> log_encode(double v, int W, int64_t b) {
  const double a = std::abs(v);
  const uint64_t s = sign_bit(v, W - 1);
  if (a == 0) return s;
  const int64_t c = std::ilogb(a) + b;
  if (c < 1 || uint64_t(c) > mask(W - 1)) return std::nullopt;
  return s | uint64_t(c);
}

}  // namespace

std::vector<int> code_fields(const Format& f) {
  const int W = f.width, E = f.exponent_width;
  switch (f.kind) {
    case Kind::integer: return {W};
    case Kind::minifloat_ieee: case Kind::minifloat_denorm: case Kind::block_minifloat:
      return {1, E, W - E - 1};
    case Kind::log: case Kind::block_log: case Kind::block_fp: return {1, W - 1};
    case Kind::binary: case Kind::binary_scaling: return {1};
    case Kind::binary_residual: return {f.levels};
    case Kind::ternary: return {2};
    case Kind::mxint8: return {8};
    default: {
      const Minifloat m = mx_element(f.kind);
      return {1, m.E, m.M};
    }
  }
}

int code_width(const Format& f) {
  int w = 0;
  for (int b : code_fields(f)) w += b;
  return w;
}

double decode(const Format& f, uint64_t code, int shared) {
  const int W = f.width, E = f.exponent_width;
  code &= mask(code_width(f));
  switch (f.kind) {
    case Kind::integer: {
      const int64_t k = code > mask(W - 1) ? int64_t(code) - (int64_t(1) << W) : int64_t(code);
      return std::ldexp(double(k), -f.frac_width);
    }
    case Kind::minifloat_ieee: return ieee_decode(code, {E, W - E - 1, f.exponent_bias});
    case Kind::minifloat_denorm: return denorm_decode(code, {E, W - E - 1, f.exponent_bias});
    case Kind::log: return log_decode(code, W, f.exponent_bias);
    case Kind::binary: case Kind::binary_scaling: return code ? 1.0 : (f.bipolar ? -1.0 : 0.0);
    case Kind::ternary: return code == 0 ? 0.0 : code == 1 ? 1.0 : code == 3 ? -1.0 : NAN;
    case Kind::binary_residual: return NAN;  // needs the trained levels μ
    case Kind::block_fp: {
      const int M = W - 1;
      const double v = std::ldexp(double(code & mask(M)), shared + 1 - M);
      return (code >> M) & 1 ? -v : v;
    }
    case Kind::block_minifloat: return ieee_decode(code, {E, W - E - 1, shared});
    case Kind::block_log: return log_decode(code, W, shared);
    case Kind::mxint8:
      if (shared == 0xFF) return NAN;
      return std::ldexp(double(int8_t(uint8_t(code))), shared - 127 - 6);
    default: {  // mxfp*
      const Minifloat m = mx_element(f.kind);
      const uint64_t c = (code >> m.M) & mask(m.E);
      if (shared == 0xFF) return NAN;
      if (f.kind == Kind::mxfp8_e4m3 && (code & 0x7f) == 0x7f) return NAN;
      if (f.kind == Kind::mxfp8_e5m2 && c == 31)
        return (code & 3) ? NAN : ((code >> 7) ? -INFINITY : INFINITY);
      return std::ldexp(ieee_decode(code, m), shared - 127);
    }
  }
}

std::optional<uint64_t> encode(const Format& f, double v, int shared) {
  if (std::isnan(v)) return std::nullopt;
  const int W = f.width, E = f.exponent_width;
  std::optional<uint64_t> code;
  switch (f.kind) {
    case Kind::integer: {
      const double k = std::ldexp(v, f.frac_width);
      if (std::abs(k) <= std::ldexp(1.0, W)) code = uint64_t(int64_t(k)) & mask(W);
      break;
    }
    case Kind::minifloat_ieee: code = ieee_encode(v, {E, W - E - 1, f.exponent_bias}); break;
    case Kind::minifloat_denorm: {
      const int M = W - E - 1;
      for (uint64_t c = 0; c <= mask(E) && !code; ++c) {  // the finest grid holding v
        const double m = std::ldexp(std::abs(v), M + f.exponent_bias - int(c));
        if (m == std::floor(m) && m <= double(mask(M))) code = sign_bit(v, W - 1) | (c << M) | uint64_t(m);
      }
      break;
    }
    case Kind::log: code = log_encode(v, W, f.exponent_bias); break;
    case Kind::binary: case Kind::binary_scaling: code = v > 0 ? 1 : 0; break;
    case Kind::ternary: code = v > 0 ? 1 : v < 0 ? 3 : 0; break;
    case Kind::binary_residual: return std::nullopt;
    case Kind::block_fp: {
      const int M = W - 1;
      const double k = std::ldexp(std::abs(v), M - 1 - shared);
      if (k <= double(mask(M))) code = sign_bit(v, M) | uint64_t(k);
      break;
    }
    case Kind::block_minifloat: code = ieee_encode(v, {E, W - E - 1, shared}); break;
    case Kind::block_log: code = log_encode(v, W, shared); break;
    case Kind::mxint8: {
      const double q = std::ldexp(v, 127 + 6 - shared);
      if (std::abs(q) <= 127) code = uint64_t(uint8_t(int8_t(q)));
      break;
    }
    default:
      code = ieee_encode(std::ldexp(v, 127 - shared), mx_element(f.kind));
      break;
  }
  if (code && f.kind != Kind::binary && f.kind != Kind::binary_scaling && f.kind != Kind::ternary &&
      decode(f, *code, shared) != v)
    return std::nullopt;  // not a value of the format
  return code;
}

std::string code_bits(const Format& f, uint64_t code) {
  std::string s;
  std::vector<int> fields = code_fields(f);
  int pos = code_width(f);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ' ';
    for (int b = 0; b < fields[i]; ++b) s += ((code >> --pos) & 1) ? '1' : '0';
  }
  return s;
}

std::vector<std::pair<uint64_t, std::optional<double>>> code_table(const Format& f) {
  MASE_CHECK(is_scalar(f.kind) || (is_mx(f.kind) && f.kind != Kind::mxint8), ConfigError,
             "[quant] --table lists scalar formats (integer, minifloat_ieee, minifloat_denorm, log) "
             "and MX element formats; ", kind_name(f.kind), " values depend on ",
             is_block(f.kind) ? "each block's shared scale" : "statistics of the data");
  const int w = code_width(f);
  MASE_CHECK(w <= 16, ConfigError, "[quant] --table lists at most 2^16 codes, ", f.str(), " has 2^", w);
  std::vector<std::pair<uint64_t, std::optional<double>>> t;
  for (uint64_t c = 0; c < (uint64_t(1) << w); ++c) {
    const double v = decode(f, c, 127);  // MX elements: scale 2^0
    // NaN codes (E4M3, E5M2) are NaN, E5M2's infinity codes ±inf; finite values above f32's
    // range (8-bit exponents with a small bias) are not values a tensor can hold
    const bool held = std::isnan(v) || std::isinf(v) || std::abs(v) <= FLT_MAX;
    t.emplace_back(c, held ? std::optional<double>(v) : std::nullopt);
  }
  return t;
}

int block_shared_param(const float* x, int64_t n, const Format& f) {
  return cpu::block_shared_param(x, n, f);
}

}  // namespace mase::quant
