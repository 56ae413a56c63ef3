// runtime/random.cpp — Philox4x32-10 and the fills built on it (see random.h).
#include "runtime/random.h"

#include <cmath>
#include <numbers>

#include "runtime/parallel.h"

namespace mase {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  // 10 rounds of: multiply two words by constants, xor the high halves with the other words
  // and the key; bump the key by the Weyl constants between rounds.
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{kM0} * c0, p1 = uint64_t{kM1} * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

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
