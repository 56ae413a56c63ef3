// tests/quant/test_block.cpp — block formats against a per-block brute-force oracle.
//
// For every block the oracle finds the shared exponent or bias from the definition in
// formats.md (with frexp, not the kernel's code), enumerates the element codes at that scale,
// and takes the nearest value (ties to the even code). Probe blocks put a chosen maximum first,
// so the shared parameter is known, and fill the rest with every midpoint of the element grid
// (and its neighbours); random blocks, zero, NaN and inf blocks, and a trailing partial block
// complete the picture.
#include <doctest/doctest.h>

#include <deque>
#include <optional>
#include <nlohmann/json.hpp>

#include "oracle.h"
#include "quant/format.h"
#include "runtime/kernels/quant_block.h"

using namespace mase;
using namespace mase::quant;

namespace test_block {

namespace {

int floor_log2(double a) {  // frexp: a = f·2^e with f in [0.5, 1)
  int e;
  std::frexp(a, &e);
  return e - 1;
}
int ceil_log2(double a) { return std::exp2(floor_log2(a)) == a ? floor_log2(a) : floor_log2(a) + 1; }

std::vector<test::Coded> scaled(std::vector<test::Coded> c, int s) {
  for (auto& x : c) x.value = std::ldexp(x.value, s);
  return c;
}

// OCP MX element codes (value of the element alone, before the block scale).
std::vector<test::Coded> mx_element_codes(Kind k) {
  std::vector<test::Coded> c, out;
  switch (k) {
    case Kind::mxfp8_e4m3:
      for (auto x : test::minifloat_ieee_codes(8, 4, 7))
        if ((x.code & 0x7f) != 0x7f) out.push_back(x);  // S.1111.111 is NaN
      return out;
    case Kind::mxfp8_e5m2:
      for (auto x : test::minifloat_ieee_codes(8, 5, 15))
        if (((x.code >> 2) & 31) != 31) out.push_back(x);  // exponent 31: inf and NaN
      return out;
    case Kind::mxfp6_e3m2: return test::minifloat_ieee_codes(6, 3, 3);
    case Kind::mxfp6_e2m3: return test::minifloat_ieee_codes(6, 2, 1);
    default: return test::minifloat_ieee_codes(4, 2, 1);  // e2m1
  }
}
int mx_emax(Kind k) {
  return k == Kind::mxfp8_e4m3 ? 8 : k == Kind::mxfp8_e5m2 ? 15 : k == Kind::mxfp6_e3m2 ? 4 : 2;
}

// The element values of a block whose largest magnitude is amax > 0 (finite), and how to
// pick the nearest one.
struct BlockSet {
  test::ValueSet set;
  std::optional<test::LogOracle> log;  // block_log rounds in the log domain
  double nearest(double x) const { return log ? log->nearest(x) : set.nearest(x); }
};

BlockSet block_set(const Format& f, double amax) {
  BlockSet bs;
  const int W = f.width, E = f.exponent_width;
  switch (f.kind) {
    case Kind::block_fp: {
      const int M = W - 1, e = std::clamp(floor_log2(amax), -f.exponent_bias, (1 << E) - 1 - f.exponent_bias);
      std::vector<test::Coded> c;
      for (uint64_t k = 0; k < (uint64_t(1) << M); ++k) {
        double v = std::ldexp(double(k), e + 1 - M);
        c.push_back({v, k});
        c.push_back({-v, k | (uint64_t(1) << M)});
      }
      bs.set.build(c);
      break;
    }
    case Kind::block_minifloat: {
      const int b = std::clamp((1 << E) - 1 - floor_log2(amax), 0, (1 << f.exponent_bias_width) - 1);
      bs.set.build(test::minifloat_ieee_codes(W, E, b));
      break;
    }
    case Kind::block_log: {
      const int b = int(std::clamp<int64_t>((int64_t(1) << (W - 1)) - 1 - ceil_log2(amax), 0,
                                            (int64_t(1) << f.exponent_bias_width) - 1));
      bs.log.emplace(W, b);
      bs.set = bs.log->set;
      break;
    }
    case Kind::mxint8: {
      const int s = std::clamp(floor_log2(amax), -127, 127);
      std::vector<test::Coded> c;
      for (int q = -127; q <= 127; ++q) c.push_back({std::ldexp(double(q), s - 6), uint64_t(q & 0xff)});
      bs.set.build(c);
      break;
    }
    default: {
      const int s = std::clamp(floor_log2(amax) - mx_emax(f.kind), -127, 127);
      bs.set.build(scaled(mx_element_codes(f.kind), s));
    }
  }
  return bs;
}

std::vector<double> oracle_block(const Format& f, const float* x, int64_t n) {
  double amax = 0;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) finite &= std::isfinite(x[i]), amax = std::max(amax, std::abs(double(x[i])));
  std::vector<double> y(n);
  if (!finite) return std::vector<double>(n, NAN);
  if (amax == 0) return std::vector<double>(x, x + n);
  BlockSet bs = block_set(f, amax);
  for (int64_t i = 0; i < n; ++i) y[i] = bs.nearest(x[i]);
  return y;
}

// Blocks of probes: for each maximum, a block starting with it and holding values that probe
// the element grid at that scale (every midpoint ± one ulp), all of magnitude ≤ the maximum.
std::deque<std::vector<float>> probe_blocks(const Format& f, int bs, uint32_t seed) {
  std::deque<std::vector<float>> blocks;
  std::mt19937 rng(seed);
  // maxima at the bottom, middle and very top of a binade (the top rounds up to the next
  // power and must saturate), tiny, subnormal, huge
  for (double amax : {1.0, 0.7, 1.999, 0.99999, 255.9, 3.1e-3, 1e-20, 0x1.8p-130, 5e4, 1e30, 3e38}) {
    BlockSet set = block_set(f, amax);
    std::vector<double> mag;
    for (double v : set.set.values) if (std::abs(v) <= amax) mag.push_back(v);
    std::vector<float> probes;
    for (float p : test::probe_inputs(mag, seed, 50))
      if (std::isfinite(p) && std::abs(p) <= float(amax)) probes.push_back(p);
    std::shuffle(probes.begin(), probes.end(), rng);
    for (size_t i = 0; i < probes.size(); i += bs - 1) {
      std::vector<float> b = {float(i % 2 ? -amax : amax)};
      for (size_t j = i; j < std::min(probes.size(), i + bs - 1); ++j) b.push_back(probes[j]);
      blocks.push_back(b);
    }
  }
  return blocks;
}

void check_block_format(const Format& f, uint32_t seed) {
  const int bs = f.block_size;
  std::deque<std::vector<float>> blocks = probe_blocks(f, bs, seed);
  // special blocks: zeros, NaN, inf, one tiny subnormal, random wide-range values
  blocks.push_back(std::vector<float>(bs, 0.f));
  blocks.push_back({1.f, NAN, 2.f});
  blocks.push_back({1.f, -INFINITY});
  blocks.push_back({0x1p-149f, 0.f, -0x1p-149f});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> lg(-40, 40);
  for (int k = 0; k < 40; ++k) {
    std::vector<float> b;
    for (int i = 0; i < bs; ++i) b.push_back(float((i % 3 ? 1 : -1) * std::exp2(lg(rng) / (k % 4 + 1))));
    blocks.push_back(b);
  }
  // lay the blocks out as rows of cols = 3·bs + bs/2 (+1) elements: the last block of each
  // row is partial; a block shorter than its slot is padded with copies of its own values
  const int64_t cols = 3 * bs + bs / 2 + 1;
  const int64_t rows = int64_t(blocks.size() + 3) / 4 + 1;
  std::vector<float> x(rows * cols, 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; j += bs) {
      int64_t n = std::min<int64_t>(bs, cols - j);
      if (blocks.empty()) break;
      std::vector<float> b = blocks.front();
      blocks.pop_front();
      for (int64_t i = 0; i < n; ++i) x[r * cols + j + i] = i < int64_t(b.size()) ? b[i] : b[i % b.size()] * 0.5f;
    }
  std::vector<float> y(x.size());
  cpu::block_forward<float>(y.data(), x.data(), rows, cols, f);
  std::vector<double> xd(x.begin(), x.end()), yd(x.size());
  cpu::block_forward<double>(yd.data(), xd.data(), rows, cols, f);
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; j += bs) {
      int64_t n = std::min<int64_t>(bs, cols - j);
      std::vector<double> want = oracle_block(f, &x[r * cols + j], n);
      for (int64_t i = 0; i < n && bad < 5; ++i) {
        size_t k = size_t(r * cols + j + i);
        double w = float(want[i]);  // f32 storage
        if (!test::same(y[k], w) || !test::same(yd[k], want[i])) {
          ++bad;
          INFO(f.str() << " row " << r << " block at " << j << ": x = " << test::hex(x[k]) << " -> "
                       << test::hex(y[k]) << " (f64 " << test::hex(yd[k]) << "), oracle " << test::hex(want[i]));
          CHECK(false);
        }
      }
    }
  CHECK(bad == 0);
}

Format fmt(const char* name, nlohmann::json p) { return make_format(name, p); }

// How many outputs of the f32 kernel differ from the f64 kernel's on the same blocks — i.e.
// values of the format that f32 storage cannot hold — over blocks whose maxima span f32, from
// its largest value down to its smallest subnormal.
int f32_misses(const Format& f) {
  std::vector<float> x;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> frac(0, 1);
  for (double amax : {3.4028234663852886e38, 1e38, 1e30, 255.9, 1.0, 0.7, 1e-20, 1e-38,
                      0x1.8p-130, 0x1p-140, 0x1p-147, 0x1p-149}) {
    x.push_back(float(amax));
    for (int i = 1; i < f.block_size; ++i) x.push_back(float((i % 2 ? -1 : 1) * amax * frac(rng)));
  }
  const int64_t rows = int64_t(x.size()) / f.block_size;
  std::vector<float> y(x.size());
  std::vector<double> xd(x.begin(), x.end()), yd(x.size());
  cpu::block_forward<float>(y.data(), x.data(), rows, f.block_size, f);
  cpu::block_forward<double>(yd.data(), xd.data(), rows, f.block_size, f);
  int misses = 0;
  for (size_t i = 0; i < y.size(); ++i) misses += double(y[i]) != yd[i];
  return misses;
}

}  // namespace

TEST_CASE("block_fp: hand-checked block and exhaustive per-block oracle") {
  // W = 4 (M = 3), E = 4 (b = 7), block of 3: max 0.9 -> e = floor(log2 0.9) = −1, spacing
  // 2^(e+1−M) = 1/8: 0.9 -> 7/8, 0.3 -> 2/8 (0.3·8 = 2.4), −0.0625 -> −0 (0.5 ties to even k=0)
  Format f = fmt("block_fp", {{"width", 4}, {"exponent_width", 4}, {"block_size", 3}});
  std::vector<float> x = {0.9f, 0.3f, -0.0625f}, y(3);
  cpu::block_forward<float>(y.data(), x.data(), 1, 3, f);
  CHECK(y == std::vector<float>{0.875f, 0.25f, -0.f});
  for (auto [W, E, b, bs] : std::vector<std::array<int, 4>>{{8, 8, 127, 16}, {4, 4, 7, 8}, {2, 3, 3, 5}, {6, 2, 1, 4}})
    check_block_format(fmt("block_fp", {{"width", W}, {"exponent_width", E}, {"exponent_bias", b}, {"block_size", bs}}), W + bs);
}


TEST_CASE("block_fp: exponent_bias at both ends of its range, and one past each") {
  // b in −127..2^E + 150 − W (format.cpp says why). At b = −127 every f32 block gets e ≤ 127:
  // W 8 (M 7), max f32 (2^24 − 1)·2^104 in steps of 2^(127+1−7) = 2^121 is 127.99…, RNE 128,
  // saturated to 127: 127·2^121, finite. One less (e = 128) rounds it to 2^128 = inf in f32.
  Format lo = fmt("block_fp", {{"width", 8}, {"exponent_width", 8}, {"exponent_bias", -127}, {"block_size", 2}});
  std::vector<float> x = {3.4028234663852886e38f, 1.f}, y(2);
  cpu::block_forward<float>(y.data(), x.data(), 1, 2, lo);
  CHECK(y == std::vector<float>{std::ldexp(127.f, 121), 0.f});
  // At b = 2^4 + 150 − 4 = 162 (W 4, E 4) the top exponent is 15 − 162 = −147, step
  // 2^(−147+1−3) = 2^−149: 1.0 saturates to 7·2^−149, f32's own subnormals stay as they are.
  Format hi = fmt("block_fp", {{"width", 4}, {"exponent_width", 4}, {"exponent_bias", 162}, {"block_size", 3}});
  x = {1.f, 0x1p-149f, -0x1p-148f};
  y.resize(3);
  cpu::block_forward<float>(y.data(), x.data(), 1, 3, hi);
  CHECK(y == std::vector<float>{7 * 0x1p-149f, 0x1p-149f, -0x1p-148f});
  for (const Format& f : {lo, hi}) check_block_format(f, 11);
  // every output an f32 at the ends of the range, for several widths; one step outside (built
  // without validation, as parse_format would now refuse them) the kernel's f32 outputs are
  // not the format's values: inf for a finite input, 7·2^−150 rounded to 2^−147
  for (auto [W, E] : std::vector<std::array<int, 2>>{{8, 8}, {4, 4}, {2, 1}, {25, 8}, {6, 3}}) {
    Format f = fmt("block_fp", {{"width", W}, {"exponent_width", E}, {"block_size", 4}});
    for (int b : {-127, (1 << E) + 150 - W}) {
      f.exponent_bias = b;
      CHECK_NOTHROW(f.validate());
      CHECK_MESSAGE(f32_misses(f) == 0, f.str());
    }
    for (int b : {-128, (1 << E) + 151 - W}) {
      f.exponent_bias = b;
      CHECK_THROWS_AS(f.validate(), ConfigError);
      CHECK_MESSAGE(f32_misses(f) > 0, f.str());
    }
  }
}

TEST_CASE("block_minifloat: exhaustive per-block oracle") {
  for (auto [W, E, Bw, bs] : std::vector<std::array<int, 4>>{{8, 4, 8, 16}, {6, 3, 4, 8}, {5, 2, 2, 7}, {4, 3, 8, 4}, {8, 4, 3, 32}})
    check_block_format(fmt("block_minifloat", {{"width", W}, {"exponent_width", E}, {"exponent_bias_width", Bw}, {"block_size", bs}}), W * bs);
}

TEST_CASE("block_log: exhaustive per-block oracle") {
  for (auto [W, Bw, bs] : std::vector<std::array<int, 3>>{{8, 8, 16}, {4, 4, 8}, {5, 2, 5}, {6, 8, 32}})
    check_block_format(fmt("block_log", {{"width", W}, {"exponent_bias_width", Bw}, {"block_size", bs}}), W + bs);
}

TEST_CASE("mxint8 and the MX float family: exhaustive per-block oracle") {
  // hand check: max 3.0 -> s = 1 (scale byte 128), step 2^1/64 = 1/32: 3.0 -> 96/32,
  // 0.01 -> RNE(0.32) = 0, 1.015625 = 32.5/32 -> 32/32 (tie to even q)
  Format mx = fmt("mxint8", nullptr);
  std::vector<float> x = {3.f, 0.01f, 1.015625f, -1.046875f}, y(4);
  cpu::block_forward<float>(y.data(), x.data(), 1, 4, mx);
  CHECK(y == std::vector<float>{3.f, 0.f, 1.0f, -1.0625f});  // −33.5/32 -> −34/32
  CHECK(cpu::block_shared_param(x.data(), 4, mx) == 128);
  for (const char* name : {"mxint8", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1"})
    check_block_format(fmt(name, nullptr), 32);
}

}  // namespace test_block
