// runtime/random.cpp — the fills built on Philox4x32-10 (runtime/philox.h); see random.h.
#include "runtime/random.h"

#include <cmath>
#include <numbers>

#include "runtime/parallel.h"

namespace mase {

Generator& default_generator() {
  static Generator g(0);
  return g;
}
void manual_seed(uint64_t seed) { default_generator() = Generator(seed); }

namespace {
// Fill a packed float/double buffer; value_at(words, lane) maps a Philox block to a value.
template <class T, class F>
void fill_blocks(T* out, int64_t n, uint64_t seed, uint64_t offset, F value_at) {
  const int64_t blocks = (n + 3) / 4;
  parallel_for(0, blocks, kGrainElems / 4, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      auto w = philox4x32(offset + b, seed);
      for (int lane = 0; lane < 4 && b * 4 + lane < n; ++lane)
        out[b * 4 + lane] = static_cast<T>(value_at(w, lane));
    }
  });
}

template <class F>
void fill_float_tensor(const Tensor& t, Generator& gen, const char* op, F value_at) {
  MASE_CHECK(is_floating(t.dtype()), DTypeError, "[", op, "] expected a floating tensor, got ",
             t.dtype());
  Tensor host = Tensor::empty(t.shape(), t.dtype());
  uint64_t start = gen.advance(t.numel());
  dispatch_float(t.dtype(), op, [&]<class T>() {
    fill_blocks(host.data<T>(), t.numel(), gen.seed, start, value_at);
  });
  copy_(t, host);
}
}  // namespace

void uniform_(const Tensor& t, double lo, double hi, Generator& gen) {
  fill_float_tensor(t, gen, "uniform_", [&](const std::array<uint32_t, 4>& w, int lane) {
    return lo + (hi - lo) * static_cast<double>(uint_to_unit(w[lane]));
  });
}

void normal_(const Tensor& t, double mean, double stddev, Generator& gen) {
  // Box–Muller on lane pairs (0,1) and (2,3): z0 = r cos θ, z1 = r sin θ with
  // r = sqrt(-2 ln u1), θ = 2π u2, u1 in (0, 1] so the log is finite.
  fill_float_tensor(t, gen, "normal_", [&](const std::array<uint32_t, 4>& w, int lane) {
    double u1 = 1.0 - static_cast<double>(uint_to_unit(w[lane & ~1]));
    double u2 = static_cast<double>(uint_to_unit(w[lane | 1]));
    double r = std::sqrt(-2.0 * std::log(u1)), theta = 2.0 * std::numbers::pi * u2;
    return mean + stddev * r * ((lane & 1) ? std::sin(theta) : std::cos(theta));
  });
}

Tensor rand(const Shape& shape, Generator& gen) {
  Tensor t = Tensor::empty(shape);
  uniform_(t, 0.0, 1.0, gen);
  return t;
}

Tensor randn(const Shape& shape, Generator& gen) {
  Tensor t = Tensor::empty(shape);
  normal_(t, 0.0, 1.0, gen);
  return t;
}

}  // namespace mase
