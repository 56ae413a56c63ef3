// tests/runtime/test_attn_tile.cpp — the fused attention's own tile pieces (runtime/cpu/
// attn_tile.h), each against the code it replaces: the AVX-512 and AVX2 tile products against
// a scalar fma chain in the kernels' order (bit for bit), the two forward sweeps against
// rowwise.h's add-mask / row_max / exp_shift_sum (bit for bit), the backward sweep against its
// scalar formula (to the last bit of dS, which depends on FMA contraction). Sizes cut every
// register tile (rows past 6, columns past 16 and 64, K = 0 and 1); NaN, ±inf and fully masked
// rows. Each case is *skipped* on a CPU without its ISA; tests/autograd/test_sdpa_fused.cpp
// checks whole attention calls, on whichever path the CPU takes, against the reference.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/attn_tile.h"
#include "runtime/cpu/fast_math.h"
#include "runtime/cpu/rowwise.h"
#include "runtime/cpu_features.h"

using namespace mase;
using namespace mase::cpu;
using test::random_floats;

namespace test_attn_tile {

namespace {

bool same_bits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

namespace {

// Every shape and stride case of a tile product against the scalar fma chain.
void check_product(void (*kernel)(const AttnProduct&)) {
  int64_t bad = 0, cases = 0;
  for (bool trans : {false, true})
    for (bool acc : {false, true})
      for (int64_t m : {1, 5, 6, 7, 13, 64})
        for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130})
          for (int64_t k : {0, 1, 3, 64, 128}) {
            ++cases;
            const int64_t lda = trans ? m + 3 : k + 5;  // A is (m, k), or (k, m) read transposed
            const int64_t ldb = n + 7, ldc = n + 9;
            const std::vector<float> A = random_floats((trans ? k : m) * lda + 1, 1);
            const std::vector<float> B = random_floats(std::max<int64_t>(k, 1) * ldb, 2);
            std::vector<float> C = random_floats(m * ldc, 3), want = C;
            const float alpha = 0.375f;
            const int64_t ars = trans ? 1 : lda, aks = trans ? lda : 1;
            kernel({A.data(), ars, aks, B.data(), ldb, C.data(), ldc, m, n, k, alpha, acc});
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                float s = 0.0f;
                for (int64_t kk = 0; kk < k; ++kk)
                  s = std::fma(A[size_t(i * ars + kk * aks)], B[size_t(kk * ldb + j)], s);
                float& w = want[size_t(i * ldc + j)];
                w = acc ? std::fma(alpha, s, w) : alpha * s;
              }
            // the padding between rows (columns n .. ldc) must be untouched
            for (size_t e = 0; e < C.size(); ++e) bad += !same_bits(C[e], want[e]);
          }
  CHECK(cases == 2 * 2 * 6 * 8 * 5);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("attn tile product (AVX-512): C = alpha·op(A)·B (+ C) equals the fma chain bit for bit") {
  if (!cpu_features().avx512()) return test::skip("this CPU has no AVX-512");
  check_product(attn_product_avx512);
}

TEST_CASE("attn tile product (AVX2): C = alpha·op(A)·B (+ C) equals the fma chain bit for bit") {
  if (!(cpu_features().avx2 && cpu_features().fma)) return test::skip("this CPU has no AVX2/FMA");
  check_product(attn_product_avx2);
}

TEST_CASE("attn softmax sweeps (AVX-512) equal add-mask + row_max + exp_shift_sum bit for bit") {
  if (!cpu_features().avx512()) return test::skip("this CPU has no AVX-512");
  for (int64_t cols : {1, 15, 16, 17, 128, 131}) {
    CAPTURE(cols);
    const int64_t rows = 7, ld = cols + 5;
    std::vector<float> S = random_floats(rows * ld, 4);
    for (float& x : S) x *= 30.0f;  // exps down to e^-60 and the flush below e^-87
    // row 1: a NaN; row 2: all −inf (fully masked); row 3: +inf; row 4: one huge value
    S[size_t(1 * ld + cols / 2)] = kNaN;
    for (int64_t j = 0; j < cols; ++j) S[size_t(2 * ld + j)] = -kInf;
    S[size_t(3 * ld)] = kInf;
    S[size_t(4 * ld + cols - 1)] = 1e30f;
    std::vector<float> mask = random_floats(2 * cols, 5);  // two mask rows, one every other row
    mask[0] = -3.4e38f;                                    // HF's finfo.min on the first key
    for (bool with_mask : {false, true}) {
      CAPTURE(with_mask);
      std::vector<float> got = S, want = S, gmax(rows), wmax(rows);
      attn_mask_max_avx512(got.data(), ld, rows, cols, with_mask ? mask.data() : nullptr, 0,
                           gmax.data());
      for (int64_t r = 0; r < rows; ++r) {
        float* w = want.data() + r * ld;
        if (with_mask)
          for (int64_t j = 0; j < cols; ++j) w[j] += mask[size_t(j)];
        wmax[size_t(r)] = row_max(w, cols);
      }
      int64_t bad = 0;
      for (int64_t r = 0; r < rows; ++r) bad += !same_bits(gmax[size_t(r)], wmax[size_t(r)]);
      for (size_t e = 0; e < got.size(); ++e) bad += !same_bits(got[e], want[e]);
      CHECK(bad == 0);
      // the exps against each row's max (0 for a row of −inf, as sdpa.cpp shifts)
      std::vector<float> shift(rows), gsum(rows);
      for (int64_t r = 0; r < rows; ++r)
        shift[size_t(r)] = wmax[size_t(r)] == -kInf ? 0.0f : wmax[size_t(r)];
      attn_exp_sum_avx512(got.data(), ld, rows, cols, shift.data(), gsum.data());
      for (int64_t r = 0; r < rows; ++r) {
        float* w = want.data() + r * ld;
        const float s = exp_shift_sum(w, w, shift[size_t(r)], cols);
        bad += !same_bits(gsum[size_t(r)], s);
      }
      for (size_t e = 0; e < got.size(); ++e) bad += !same_bits(got[e], want[e]);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("attn backward sweep (AVX-512): P, z∘P and dS as the scalar loop computes them") {
  if (!cpu_features().avx512()) return test::skip("this CPU has no AVX-512");
  for (int64_t cols : {1, 17, 64, 131})
    for (bool drop : {false, true})
      for (bool with_mask : {false, true}) {
        CAPTURE(cols);
        CAPTURE(drop);
        CAPTURE(with_mask);
        const int64_t rows = 9, ld = cols + 3;
        std::vector<float> S = random_floats(rows * ld, 6), dP = random_floats(rows * ld, 7);
        for (float& x : S) x *= 8.0f;
        const std::vector<float> mask = random_floats(cols, 8);
        std::vector<float> z(rows * ld), m(rows), inv_l(rows), D = random_floats(rows, 9);
        for (size_t e = 0; e < z.size(); ++e) z[e] = e % 7 == 3 ? 0.0f : 1.0f / 0.9f;
        for (int64_t r = 0; r < rows; ++r) {  // any statistics will do: the formula is the test
          m[size_t(r)] = 6.0f + 0.25f * float(r);
          inv_l[size_t(r)] = 1.0f / (1.0f + float(r));
        }
        std::vector<float> P = S, G = dP, Pd(rows * ld, -7.0f);
        attn_grad_rows_avx512({P.data(), G.data(), Pd.data(), drop ? z.data() : nullptr,
                               with_mask ? mask.data() : nullptr, 0, ld, rows, cols, m.data(),
                               inv_l.data(), D.data()});
        int64_t bad_p = 0, bad_ds = 0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < cols; ++j) {
            const size_t e = size_t(r * ld + j);
            const float s = with_mask ? S[e] + mask[size_t(j)] : S[e];
            const float p = exp_f32_flush(s - m[size_t(r)]) * inv_l[size_t(r)];
            const float zz = drop ? z[e] : 1.0f;
            bad_p += !same_bits(P[e], p);
            if (drop) bad_p += !same_bits(Pd[e], p * zz);
            // dS = p·(z·dp − D): one rounding more or less (FMA contraction) is allowed
            const double ds = double(p) * (double(zz) * dP[e] - D[size_t(r)]);
            bad_ds += std::abs(G[e] - ds) > 2e-7 * (std::abs(double(zz) * dP[e]) + std::abs(D[size_t(r)])) * p + 1e-30;
          }
        for (int64_t r = 0; r < rows; ++r)  // the padding past cols is untouched
          for (int64_t j = cols; j < ld; ++j) {
            bad_p += !same_bits(P[size_t(r * ld + j)], S[size_t(r * ld + j)]);
            bad_p += !same_bits(G[size_t(r * ld + j)], dP[size_t(r * ld + j)]);
          }
        CHECK(bad_p == 0);
        CHECK(bad_ds == 0);
      }
}

}  // namespace test_attn_tile
