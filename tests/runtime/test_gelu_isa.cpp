// tests/runtime/test_gelu_isa.cpp — the f32 GELU kernels (runtime/cpu/gelu.cpp) run their loops
// compiled for AVX-512 where the CPU has it and for the build's AVX2 otherwise; either way each
// element must be exactly gelu_f32 / gelu_grad_f32 of fast_math.h (whose accuracy
// test_fast_math.cpp checks against double), bit for bit: same operations, same order, only
// more lanes. Sizes that leave vector tails (1, 15, 17, 33, 1031) and the special values.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/fast_math.h"
#include "runtime/cpu_features.h"
#include "runtime/kernels/gelu.h"

using namespace mase;

namespace test_gelu_isa {

namespace {

bool same_bits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// n values: specials first, then a spread over [-12, 12] with every sign and many binades
std::vector<float> values(int64_t n, uint32_t seed) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special{0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                                   1e-40f, -1e-40f, 1e30f, -1e30f, 5.5f, -5.5f, 9.0f, -9.0f, 20.5f,
                                   -20.5f, 0.625f};
  std::vector<float> v(n);
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = i < static_cast<int64_t>(special.size())
               ? special[i]
               : (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 24.0f;
  }
  return v;
}

void check_all_paths_exact() {
  for (int64_t cols : {1, 15, 17, 33, 1031}) {
    CAPTURE(cols);
    const int64_t rows = 3, n = rows * cols;
    const std::vector<float> x = values(n, 7), b = values(cols, 11), dy = values(n, 13);
    std::vector<float> y(n), yb(n), dx(n), dxb(n), db(cols);
    cpu::gelu_forward(y.data(), x.data(), n);
    cpu::bias_gelu_forward(yb.data(), x.data(), b.data(), rows, cols);
    cpu::gelu_backward(dx.data(), dy.data(), x.data(), n);
    cpu::bias_gelu_backward(dxb.data(), db.data(), dy.data(), x.data(), b.data(), rows, cols);
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        const float xb = x[i] + b[c];
        bad += !same_bits(y[i], cpu::gelu_f32(x[i]));
        bad += !same_bits(yb[i], cpu::gelu_f32(xb));
        bad += !same_bits(dx[i], dy[i] * cpu::gelu_grad_f32(x[i]));
        bad += !same_bits(dxb[i], dy[i] * cpu::gelu_grad_f32(xb));
      }
    CHECK(bad == 0);
    // in place (dinp == dout, as graph/passes/recompute_gelu.cpp calls it): the same bits
    std::vector<float> d = dy, db_in(cols);
    cpu::bias_gelu_backward(d.data(), db_in.data(), d.data(), x.data(), b.data(), rows, cols);
    int64_t bad_in = 0;
    for (int64_t i = 0; i < n; ++i) bad_in += !same_bits(d[i], dxb[i]);
    for (int64_t c = 0; c < cols; ++c) bad_in += !same_bits(db_in[c], db[c]);
    CHECK(bad_in == 0);
    for (int64_t c = 0; c < cols; ++c) {  // dbias: a sum in double, in some row order
      double want = 0;
      for (int64_t r = 0; r < rows; ++r) want += double(dy[r * cols + c] * cpu::gelu_grad_f32(x[r * cols + c] + b[c]));
      if (std::isnan(want)) CHECK(std::isnan(db[c]));
      else CHECK(db[c] == static_cast<float>(want));
    }
  }
}

}  // namespace

TEST_CASE("gelu f32 kernels equal gelu_f32 / gelu_grad_f32 bit for bit on this CPU's path") {
  MESSAGE("path: ", cpu_features().avx512() ? "AVX-512" : "AVX2 (the build's)");
  check_all_paths_exact();
}

TEST_CASE("gelu f32 kernels: the AVX-512 loops equal gelu_f32 bit for bit") {
  if (!cpu_features().avx512()) return test::skip("this CPU has no AVX-512");
  check_all_paths_exact();
}

}  // namespace test_gelu_isa
