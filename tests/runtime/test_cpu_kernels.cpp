// tests/runtime/test_cpu_kernels.cpp — the CPU kernels' loop structure against naive loops:
// long packed rows cut into pieces, many short broadcast rows walked by the odometer, tiled
// transposing copies, and sums whose result does not depend on the thread count. Sizes are
// chosen to cross every boundary (kGrainElems = 32768, 32-wide copy tiles, 256-row and
// 256-column sum tiles) with ragged ends. The oracles are index arithmetic written out.
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "helpers.h"
#include "runtime/kernels/binary.h"
#include "runtime/kernels/copy.h"
#include "runtime/cpu/philox_x32.h"
#include "runtime/kernels/reduce.h"
#include "runtime/parallel.h"
#include "runtime/random.h"

using namespace mase;

namespace {

template <class T = float>
std::vector<T> random_values(int64_t n, uint64_t seed) {
  Tensor t = Tensor::empty({n}, dtype_of<T>());
  Generator gen(seed);
  uniform_(t, -1.0, 1.0, gen);
  return t.to_vector<T>();
}

// Runs f() with `n` threads, then restores the default (all cores).
template <class F>
auto with_threads(int n, F f) {
  set_num_threads(n);
  auto r = f();
  set_num_threads(0);
  return r;
}

}  // namespace

TEST_CASE("binary_forward on a long packed tensor equals the scalar loop") {
  // 100003 elements merge into one row: cut into 4 pieces, the last one ragged
  const int64_t n = 100003;
  std::vector<float> a = random_values(n, 1), b = random_values(n, 2), out(n);
  const Shape s{n};
  cpu::binary_forward(BinaryOp::mul, out.data(), a.data(), {1}, b.data(), {1}, s);
  for (int64_t i = 0; i < n; ++i) REQUIRE(out[i] == a[i] * b[i]);  // same f32 op: exact
}

TEST_CASE("binary_forward broadcasts across many short rows") {
  // (3, 4, 5, 7) - (4, 1, 7): 60 rows of 7, every outer dim wraps in the odometer
  const Shape s{3, 4, 5, 7};
  std::vector<float> a = random_values(3 * 4 * 5 * 7, 3), b = random_values(4 * 7, 4);
  std::vector<float> out(a.size());
  const Strides as{140, 35, 7, 1}, bs{0, 7, 0, 1};  // b (4, 1, 7) read as (3, 4, 5, 7)
  cpu::binary_forward(BinaryOp::sub, out.data(), a.data(), as, b.data(), bs, s);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k)
        for (int64_t l = 0; l < 7; ++l) {
          const int64_t o = ((i * 4 + j) * 5 + k) * 7 + l;
          REQUIRE(out[o] == a[o] - b[j * 7 + l]);
        }
  // a row vector down a matrix with rows long enough to take whole-row pieces
  const int64_t R = 40, C = 5000;
  std::vector<float> x = random_values(R * C, 5), bias = random_values(C, 6), y(R * C);
  cpu::binary_forward(BinaryOp::add, y.data(), x.data(), {C, 1}, bias.data(), {0, 1}, {R, C});
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) REQUIRE(y[r * C + c] == x[r * C + c] + bias[c]);
}

TEST_CASE("copy_strided transposes in tiles with ragged edges") {
  // y (B, J, I) = x (B, I, J) transposed in its last two dims; I, J not multiples of 32
  const int64_t B = 3, I = 70, J = 1001;
  std::vector<float> x = random_values(B * I * J, 7), y(x.size(), 0.0f);
  // y's element (b, j, i) reads x at b·I·J + i·J + j: src strides (I·J, 1, J) over y's shape
  cpu::copy_strided(y.data(), {J * I, I, 1}, x.data(), {I * J, 1, J}, {B, J, I}, sizeof(float));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < J; ++j)
      for (int64_t i = 0; i < I; ++i) REQUIRE(y[(b * J + j) * I + i] == x[(b * I + i) * J + j]);
}

TEST_CASE("copy_strided splits heads like permute(0 2 1 3)") {
  // (B, T, NH, HS) -> (B, NH, T, HS): rows of HS contiguous values, 3 outer dims
  const int64_t B = 2, T = 33, NH = 3, HS = 16;
  std::vector<float> x = random_values(B * T * NH * HS, 8), y(x.size(), 0.0f);
  cpu::copy_strided(y.data(), {NH * T * HS, T * HS, HS, 1}, x.data(),
                    {T * NH * HS, HS, NH * HS, 1}, {B, NH, T, HS}, sizeof(float));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < NH; ++h)
        for (int64_t d = 0; d < HS; ++d)
          REQUIRE(y[((b * NH + h) * T + t) * HS + d] == x[((b * T + t) * NH + h) * HS + d]);
}

TEST_CASE("sum_forward matches a double loop on every path") {
  struct Case { int64_t outer, reduce, inner; };
  // rows <= one chunk, rows of several chunks, column sums with 1 and with several
  // row tiles, strips wider than 256 columns, and an empty reduction
  for (Case c : {Case{50, 1000, 1}, Case{3, 70001, 1}, Case{2, 100, 300}, Case{3, 700, 600},
                 Case{1, 1000, 3}, Case{4, 0, 5}}) {
    CAPTURE(c.outer);
    CAPTURE(c.reduce);
    CAPTURE(c.inner);
    std::vector<double> x = random_values<double>(c.outer * c.reduce * c.inner, 9);
    std::vector<double> out(c.outer * c.inner, -1.0);
    cpu::sum_forward(out.data(), x.data(), c.outer, c.reduce, c.inner);
    for (int64_t o = 0; o < c.outer; ++o)
      for (int64_t i = 0; i < c.inner; ++i) {
        double ref = 0;
        for (int64_t r = 0; r < c.reduce; ++r) ref += x[(o * c.reduce + r) * c.inner + i];
        REQUIRE(std::abs(out[o * c.inner + i] - ref) <= 1e-12 * (1 + c.reduce));
      }
  }
}

TEST_CASE("sum_forward gives the same bits on 1 and 2 threads") {
  // in f64 the order of the additions shows in the last bits: any thread-dependent split
  // of the work (an earlier version chose it by thread count) changes them
  for (auto [outer, reduce, inner] : {std::array<int64_t, 3>{3, 100000, 1},
                                      std::array<int64_t, 3>{1, 5000, 300}}) {
    std::vector<double> x = random_values<double>(outer * reduce * inner, 10);
    auto run = [&] {
      std::vector<double> out(outer * inner);
      cpu::sum_forward(out.data(), x.data(), outer, reduce, inner);
      return out;
    };
    std::vector<double> one = with_threads(1, run), two = with_threads(2, run);
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("dropout_keep_mask draws philox_word i for element i from any start") {
  // starts inside a Philox block and inside a group of 8 blocks, lengths with ragged ends,
  // a counter offset whose low 32 bits overflow inside a group, p from 0 to 1
  const struct {
    int64_t first, n;
    uint64_t offset;
    double p;
  } cases[] = {{0, 1000, 0, 0.1}, {3, 61, 5, 0.5}, {37, 1, 9, 0.9}, {1001, 4097, 0, 0.3},
               {2, 70, 0xFFFFFFFCull, 0.5}, {0, 64, 7, 0.0}, {5, 64, 7, 1.0}};
  for (const auto& c : cases) {
    INFO("first " << c.first << ", n " << c.n << ", offset " << c.offset << ", p " << c.p);
    DropoutMask m;
    m.on = true;
    m.seed = 0x123456789ull;
    m.offset = c.offset;
    m.threshold = dropout_threshold(c.p);
    std::vector<uint8_t> keep(static_cast<size_t>(c.n), 7);
    cpu::dropout_keep_mask(keep.data(), c.first, c.n, m);
    int64_t bad = 0, kept = 0;
    for (int64_t j = 0; j < c.n; ++j) {
      const uint32_t w = philox_word(m.seed, m.offset, static_cast<uint64_t>(c.first + j));
      bad += keep[j] != (dropout_keep(w, m.threshold) ? 1 : 0);
      kept += keep[j];
    }
    CHECK(bad == 0);
    if (c.p == 0.0) CHECK(kept == c.n);
    if (c.p == 1.0) CHECK(kept == 0);
  }
}

TEST_CASE("parallel_for inside a SerialRegion runs on the calling thread, in one piece") {
  set_num_threads(2);
  const auto me = std::this_thread::get_id();
  int pieces = 0;
  bool elsewhere = false;
  {
    SerialRegion serial;
    CHECK(SerialRegion::active());
    parallel_for(0, 1000000, 1, [&](int64_t lo, int64_t hi) {
      ++pieces;  // unsynchronised on purpose: one thread, or the count is wrong anyway
      elsewhere |= std::this_thread::get_id() != me;
      CHECK(lo == 0);
      CHECK(hi == 1000000);
    });
    {
      SerialRegion nested;  // regions nest
    }
    CHECK(SerialRegion::active());
  }
  CHECK(pieces == 1);
  CHECK_FALSE(elsewhere);
  CHECK_FALSE(SerialRegion::active());
  std::atomic<int> split{0};  // and outside it, the same loop is split again
  parallel_for(0, 1000000, 1, [&](int64_t, int64_t) { ++split; });
  CHECK(split.load() > 1);
  set_num_threads(0);
}
