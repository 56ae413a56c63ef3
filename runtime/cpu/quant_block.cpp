// runtime/cpu/quant_block.cpp — block formats, one block at a time, in f64 (see block.h).
#include "runtime/kernels/quant_block.h"

#include <cmath>

#include "runtime/kernels/quant_scalar.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

// Largest exponent of a normal element of each MX float format (OCP MX v1.0, table 1).
int mx_emax(Kind k) {
  switch (k) {
    case Kind::mxfp8_e4m3: return 8;
    case Kind::mxfp8_e5m2: return 15;
    case Kind::mxfp6_e3m2: return 4;
    default: return 2;  // e2m3, e2m1
  }
}

struct BlockStats {
  double amax = 0;
  bool finite = true;
};

template <class T>
BlockStats stats(const T* x, int64_t n) {
  BlockStats s;
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::abs(double(x[i]));
    s.finite &= std::isfinite(a);
    s.amax = std::max(s.amax, a);
  }
  return s;
}

int64_t ceil_log2(double a) {  // for a > 0
  const int e = std::ilogb(a);
  return std::ldexp(1.0, e) == a ? e : e + 1;
}

// The shared parameter of a block whose stats are s (see block_shared_param).
int shared_param(const BlockStats& s, const quant::FormatParams& f) {
  const int E = f.exponent_width, W = f.width;
  if (is_mx(f.kind) && !s.finite) return 0xFF;
  const int64_t fl = s.amax > 0 ? std::ilogb(s.amax) : -100000;  // all-zero block: clamps low
  switch (f.kind) {
    case Kind::block_fp:
      return int(std::clamp<int64_t>(fl, -f.exponent_bias, (1 << E) - 1 - f.exponent_bias));
    case Kind::block_minifloat:
      return int(std::clamp<int64_t>((1 << E) - 1 - fl, 0, (1 << f.exponent_bias_width) - 1));
    case Kind::block_log: {
      const int64_t cl = s.amax > 0 ? ceil_log2(s.amax) : -100000;
      return int(std::clamp<int64_t>((int64_t(1) << (W - 1)) - 1 - cl, 0,
                                     (int64_t(1) << f.exponent_bias_width) - 1));
    }
    case Kind::mxint8:
      return s.amax > 0 ? int(std::clamp<int64_t>(fl, -127, 127)) + 127 : 0;
    default:  // mxfp*
      return s.amax > 0 ? int(std::clamp<int64_t>(fl - mx_emax(f.kind), -127, 127)) + 127 : 0;
  }
}

template <class T>
void quantize_block(T* y, const T* x, int64_t n, const quant::FormatParams& f) {
  const BlockStats s = stats(x, n);
  if (!s.finite) {
    for (int64_t i = 0; i < n; ++i) y[i] = NAN;
    return;
  }
  if (s.amax == 0) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];  // ±0 stay
    return;
  }
  const int p = shared_param(s, f);
  switch (f.kind) {
    case Kind::block_fp: {
      const int M = f.width - 1;
      const double q = std::ldexp(1.0, p + 1 - M), kmax = std::ldexp(1.0, M) - 1;
      for (int64_t i = 0; i < n; ++i) {
        const double k = std::min(std::nearbyint(std::abs(double(x[i])) / q), kmax);
        y[i] = static_cast<T>(std::copysign(k * q, double(x[i])));
      }
      return;
    }
    case Kind::block_minifloat: {
      const auto prm = minifloat_params<double>(minifloat_ieee_spec(f.width, f.exponent_width, p));
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(minifloat_one(double(x[i]), prm));
      return;
    }
    case Kind::block_log: {
      const auto prm = log_params<double>(log_spec(f.width, p));
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(log_one(double(x[i]), prm));
      return;
    }
    case Kind::mxint8: {
      const double scale = std::ldexp(1.0, p - 127);  // 2^s
      for (int64_t i = 0; i < n; ++i) {
        const double qi = std::clamp(std::nearbyint(double(x[i]) * 64.0 / scale), -127.0, 127.0);
        y[i] = static_cast<T>(qi * scale / 64.0 + 0.0);  // + 0: q = 0 is +0 (int8 has no −0)
      }
      return;
    }
    default: {  // mxfp*: scale, quantize to the element format, scale back (exact: powers of 2)
      const double scale = std::ldexp(1.0, p - 127);
      const auto prm = minifloat_params<double>(minifloat_spec(f));
      for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<T>(scale * minifloat_one(double(x[i]) / scale, prm));
      return;
    }
  }
}

}  // namespace

template <class T>
void block_forward(T* out, const T* inp, int64_t rows, int64_t cols, const quant::FormatParams& f) {
  const int64_t bs = f.block_size;
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(cols, 1));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; j += bs)
        quantize_block(out + r * cols + j, inp + r * cols + j, std::min(bs, cols - j), f);
  });
}

int block_shared_param(const float* x, int64_t n, const quant::FormatParams& f) { return shared_param(stats(x, n), f); }

template void block_forward<float>(float*, const float*, int64_t, int64_t, const quant::FormatParams&);
template void block_forward<double>(double*, const double*, int64_t, int64_t, const quant::FormatParams&);

}  // namespace mase::cpu
