// tests/runtime/test_bf16_amx.cpp — the AMX-BF16 GEMM (runtime/cpu/bf16_amx.cpp): every
// transpose form on edge shapes (1, odd, one short of and one past a tile, several chunks)
// against a double-precision sum of the rounded operands' products; alpha, beta and a leading
// dimension wider than the matrix (nothing outside it written); the rounding while packing
// (bit for bit bf16_from_f32, midpoints included; each packer on every layout with subnormals,
// NaNs, infinities and overflow, its padding zero); a bias added in the store; a weight packed
// once (amx_bf16_pack / amx_bf16_linear) against packing per call; GELU in the store against
// bias_gelu_forward after it (gemm_bias_gelu); and --precision bf16's
// gemm<float> taking this path. *Skipped* on CPUs without AMX-BF16 (or where Linux did not grant the tile state);
// the refusal there is tested everywhere else.
#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/bf16_amx_tile.h"
#include "runtime/error.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"

using namespace mase;
using namespace mase::cpu;

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha = 1.0f, beta = 0.0f;
};

// how many entries of amx_bf16_gemm's C differ from Σ_k round(a)·round(b) in double by more
// than fp32 reassociation allows (1e-5 · Σ|a·b|), plus any write outside the M × N block
int mismatches(const Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  const int64_t lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 5, ldc = c.N + 7;
  std::vector<float> A(size_t((c.ta ? c.K : c.M) * lda)), B(size_t((c.tb ? c.N : c.K) * ldb));
  std::vector<float> C(size_t(c.M * ldc));
  for (auto& a : A) a = d(gen);
  for (auto& b : B) b = d(gen);
  for (auto& x : C) x = d(gen);
  const std::vector<float> C0 = C;
  amx_bf16_gemm(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc);
  int bad = 0;
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = C[size_t(i * ldc + j)];
      if (j >= c.N) {  // the gap between rows: untouched
        bad += std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(C0[size_t(i * ldc + j)]);
        continue;
      }
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double x = bf16_round(c.ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)]);
        const double y = bf16_round(c.tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]);
        ref += x * y;
        mag += std::abs(x * y);
      }
      ref = c.alpha * ref + c.beta * C0[size_t(i * ldc + j)];
      mag = std::abs(c.alpha) * mag + std::abs(c.beta * C0[size_t(i * ldc + j)]);
      bad += !(std::abs(got - ref) <= 1e-5 * mag + 1e-30);
    }
  return bad;
}

}  // namespace

TEST_CASE("amx bf16 gemm: every transpose form on edge shapes, within fp32 reassociation") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  int bad = 0, cases = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : {1, 15, 17, 32, 33, 300})
        for (int64_t N : {1, 16, 17, 31, 33, 100})
          for (int64_t K : {1, 31, 32, 33, 97}) {
            const int b = mismatches({ta, tb, M, N, K}, uint32_t(M * 1000 + N * 10 + K));
            if (b) INFO("ta=", ta, " tb=", tb, " M=", M, " N=", N, " K=", K, ": ", b, " wrong");
            CHECK(b == 0);
            bad += b, ++cases;
          }
  CHECK(cases == 720);
  CHECK(bad == 0);
}

TEST_CASE("amx bf16 gemm: alpha and beta, and a large shape across many chunks and threads") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  CHECK(mismatches({false, true, 70, 45, 64, 0.5f, 2.0f}, 1) == 0);
  CHECK(mismatches({true, false, 40, 70, 50, -1.0f, 1.0f}, 2) == 0);
  CHECK(mismatches({false, false, 33, 33, 33, 1.0f, 1.0f}, 3) == 0);  // the bias form: C += A·B
  CHECK(mismatches({false, true, 1100, 200, 130}, 4) == 0);           // 5 chunks × column groups
  CHECK(mismatches({true, false, 96, 80, 1500}, 5) == 0);             // a deep K: the dW form
}

TEST_CASE("amx bf16 gemm: operands rounded bit for bit as bf16_from_f32, midpoints too") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  // K = 1: C[i, j] = round(a_i) · round(b_j), exact in fp32 (8 × 8 significant bits), so any
  // rounding difference shows. Patterns of normal numbers near 1, many exactly halfway.
  const int64_t M = 64, N = 48;
  std::mt19937 gen(11);
  auto pattern = [&](int i) {
    const uint32_t top = 0x3f00u + uint32_t(gen() % 0x100);  // 0.5 .. 2, either sign below
    const uint32_t low = i % 3 == 0 ? 0x8000u : i % 3 == 1 ? uint32_t(gen() & 0xffff) : 0x7fffu;
    return std::bit_cast<float>((top << 16 | low) ^ (i % 2 ? 0x80000000u : 0u));
  };
  std::vector<float> A(static_cast<size_t>(M)), B(static_cast<size_t>(N)), C(static_cast<size_t>(M * N));
  for (int i = 0; i < M; ++i) A[size_t(i)] = pattern(i);
  for (int j = 0; j < N; ++j) B[size_t(j)] = pattern(j + 1);
  amx_bf16_gemm(false, false, M, N, 1, 1.0f, A.data(), 1, B.data(), N, 0.0f, C.data(), N);
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      bad += C[size_t(i * N + j)] != bf16_round(A[size_t(i)]) * bf16_round(B[size_t(j)]);
  CHECK(bad == 0);
}

TEST_CASE("amx bf16 packers: every layout bit for bit bf16_from_f32, subnormals and NaNs too") {
  // (the packers need AVX512-BF16 only: the attention packs for vdpbf16ps where AMX is absent)
  if (!bf16_isa_supported(Bf16Isa::avx512_bf16)) return test::skip("this CPU has no AVX512-BF16");
  // The packers round 32 floats at a time with vcvtne2ps2bf16, which reads a subnormal as zero:
  // a group holding one must take the integer rule. Specials every 37th value, so some groups
  // hold a subnormal and most hold NaNs, infinities or overflow on the instruction's path.
  const uint32_t specials[] = {0x00000001u, 0x807fffffu, 0x00400000u, 0x00800000u, 0x80000000u,
                               0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f800001u, 0xffa12345u,
                               0x7f7fffffu, 0x3f808000u, 0x3f818000u, 0x007f8000u};
  std::mt19937 gen(5);
  std::normal_distribution<float> d;
  auto fill = [&](std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = i % 37 == 11 ? std::bit_cast<float>(specials[(i / 37) % std::size(specials)]) : d(gen);
  };
  const int64_t i0 = 5, rows = 33, K = 70, kp = 96, N = 37, lda = 75;
  std::vector<float> A(size_t((i0 + rows + 2) * lda)), At(size_t(K * lda)), B(size_t(N * lda)),
      Bt(size_t(K * lda));
  for (auto* v : {&A, &At, &B, &Bt}) fill(*v);
  auto want = [](float x) { return bf16_from_f32(x); };
  for (bool ta : {false, true}) {  // A: rows i0 .. i0 + 32 of op(A), padded to 64 rows × kp
    std::vector<uint16_t> out(size_t(64 * kp), 0xffff);
    amx_pack_a(ta ? At.data() : A.data(), lda, ta, i0, rows, K, kp, out.data());
    int bad = 0;
    for (int64_t r = 0; r < 64; ++r)
      for (int64_t k = 0; k < kp; ++k) {
        const float x = r >= rows || k >= K ? 0.0f
                        : ta                ? At[size_t(k * lda + i0 + r)]
                                            : A[size_t((i0 + r) * lda + k)];
        const int64_t at = ((r / 16) * (kp / 32) + k / 32) * 512 + (r % 16) * 32 + k % 32;
        bad += out[size_t(at)] != want(x);
      }
    CAPTURE(ta);
    CHECK(bad == 0);
  }
  for (bool tb : {false, true}) {  // B: 3 blocks of 16 columns, each kp / 32 tiles of pairs of k
    std::vector<uint16_t> out(size_t(3 * kp * 16), 0xffff);
    amx_pack_b(tb ? B.data() : Bt.data(), lda, tb, N, K, kp, 0, 3, out.data());
    int bad = 0;
    for (int64_t n = 0; n < 48; ++n)
      for (int64_t k = 0; k < kp; ++k) {
        const float x = n >= N || k >= K ? 0.0f : tb ? B[size_t(n * lda + k)] : Bt[size_t(k * lda + n)];
        const int64_t at =
            (n / 16) * kp * 16 + (k / 32) * 512 + (k % 32) / 2 * 32 + (n % 16) * 2 + k % 2;
        bad += out[size_t(at)] != want(x);
      }
    CAPTURE(tb);
    CHECK(bad == 0);
  }
}

TEST_CASE("gemm precision bf16: large GEMMs take the AMX path where the CPU has it") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  const int64_t M = 128, N = 96, K = 80;  // 983,040 multiply-adds ≥ kAmxMinWork
  static_assert(128 * 96 * 80 >= kAmxMinWork);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> A(size_t(M * K)), B(size_t(N * K)), want(size_t(M * N)), got(size_t(M * N));
  for (auto& a : A) a = d(gen);
  for (auto& b : B) b = d(gen);
  amx_bf16_gemm(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, want.data(), N);
  set_cpu_gemm_precision(GemmPrecision::bf16);
  gemm<float>(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, got.data(), N);
  set_amx_bf16_enabled(false);  // the A/B switch: another path, other sums
  std::vector<float> other(size_t(M * N));
  gemm<float>(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, other.data(), N);
  set_amx_bf16_enabled(true);
  set_cpu_gemm_precision(GemmPrecision::fp32);
  CHECK(got == want);
  int far = 0;
  for (size_t i = 0; i < got.size(); ++i) far += std::abs(got[i] - other[i]) > 1e-4f;
  CHECK(far == 0);
}

namespace {
std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}
}  // namespace

TEST_CASE("amx bf16 gemm: a bias added as C is stored equals C filled with it first (beta 1)") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  // the two-pass form (C = bias in every row, then C += A·B) was gemm_bias's under bf16; the
  // bias in the store must give its bits: s + b rounded once either way. K 1,500: the bias in
  // the first of two blocks of k only. Gaps between C's rows stay as they were.
  for (const Case c : {Case{false, true, 70, 45, 64}, Case{false, true, 33, 100, 1500},
                       Case{true, false, 17, 33, 97}, Case{false, false, 300, 17, 31}}) {
    CAPTURE(c.M);
    CAPTURE(c.N);
    CAPTURE(c.K);
    const int64_t lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 5, ldc = c.N + 7;
    const auto A = randoms(size_t((c.ta ? c.K : c.M) * lda), 1);
    const auto B = randoms(size_t((c.tb ? c.N : c.K) * ldb), 2);
    const auto bias = randoms(size_t(c.N), 3);
    std::vector<float> fused = randoms(size_t(c.M * ldc), 4), filled = fused;
    amx_bf16_gemm(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, fused.data(), ldc,
                  bias.data());
    for (int64_t i = 0; i < c.M; ++i)
      std::copy(bias.begin(), bias.end(), filled.begin() + i * ldc);
    amx_bf16_gemm(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data(), lda, B.data(), ldb, 1.0f, filled.data(), ldc);
    int differ = 0;
    for (size_t i = 0; i < fused.size(); ++i)
      differ += std::bit_cast<uint32_t>(fused[i]) != std::bit_cast<uint32_t>(filled[i]);
    CHECK(differ == 0);
  }
  // with alpha and beta too: C = alpha·A·B + beta·C0 + bias against the double sum
  const int64_t M = 40, N = 50, K = 70;
  const auto A = randoms(size_t(M * K), 5), B = randoms(size_t(K * N), 6), bias = randoms(size_t(N), 7);
  const auto C0 = randoms(size_t(M * N), 8);
  std::vector<float> C = C0;
  amx_bf16_gemm(false, false, M, N, K, 0.5f, A.data(), K, B.data(), N, -2.0f, C.data(), N, bias.data());
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(bf16_round(A[size_t(i * K + k)])) * bf16_round(B[size_t(k * N + j)]);
        ref += p, mag += std::abs(p);
      }
      const double c0 = C0[size_t(i * N + j)], b = bias[size_t(j)];
      ref = 0.5 * ref - 2.0 * c0 + b;
      mag = 0.5 * mag + 2.0 * std::abs(c0) + std::abs(b);
      bad += !(std::abs(C[size_t(i * N + j)] - ref) <= 1e-5 * mag);
    }
  CHECK(bad == 0);
}

TEST_CASE("amx bf16 linear: a weight packed once equals packing it on every call, bit for bit") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  struct Shape3 { int64_t rows, out, in; };
  for (const Shape3 c : {Shape3{1, 3, 5}, Shape3{33, 65, 33}, Shape3{300, 100, 97}, Shape3{64, 48, 1500},
                         Shape3{17, 16, 32}})
    for (bool with_bias : {false, true}) {
      CAPTURE(c.rows);
      CAPTURE(c.out);
      CAPTURE(c.in);
      CAPTURE(with_bias);
      const int64_t ldx = c.in + 3, ldw = c.in + 2, ldy = c.out + 5;
      const auto x = randoms(size_t(c.rows * ldx), 1), W = randoms(size_t(c.out * ldw), 2);
      const auto bias = randoms(size_t(c.out), 3);
      const float* b = with_bias ? bias.data() : nullptr;
      const auto packed = amx_bf16_pack(W.data(), ldw, c.out, c.in);
      CHECK(amx_bf16_out(*packed) == c.out);
      CHECK(amx_bf16_in(*packed) == c.in);
      CHECK(amx_bf16_bytes(*packed) >= size_t(c.out * c.in) * 2);
      std::vector<float> once = randoms(size_t(c.rows * ldy), 4), every = once;
      amx_bf16_linear(once.data(), ldy, x.data(), ldx, c.rows, *packed, b);
      amx_bf16_gemm(false, true, c.rows, c.out, c.in, 1.0f, x.data(), ldx, W.data(), ldw, 0.0f, every.data(),
                    ldy, b);
      int differ = 0;
      for (size_t i = 0; i < once.size(); ++i)
        differ += std::bit_cast<uint32_t>(once[i]) != std::bit_cast<uint32_t>(every[i]);
      CHECK(differ == 0);
    }
}

TEST_CASE("amx bf16 gemm: refused where the CPU has no AMX-BF16, and bad sizes everywhere") {
  std::vector<float> x(4);
  CHECK_THROWS_AS(amx_bf16_gemm(false, false, -1, 1, 1, 1.0f, x.data(), 1, x.data(), 1, 0.0f, x.data(), 1),
                  ShapeError);
  CHECK_THROWS_AS(amx_bf16_pack(x.data(), 1, 2, 3), ShapeError);  // a row stride under `in`
  if (amx_bf16_available()) return;  // runs above
  CHECK_THROWS_AS(amx_bf16_gemm(false, false, 1, 1, 1, 1.0f, x.data(), 1, x.data(), 1, 0.0f, x.data(), 1),
                  ConfigError);
  CHECK_THROWS_AS(amx_bf16_pack(x.data(), 2, 2, 2), ConfigError);
}

TEST_CASE("amx bf16 gemm: GELU in the store equals bias_gelu_forward after it, bit for bit") {
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  // K ≤ 1,024 (one block of k): gelu(product + bias) from the bias-free product, as BERT's
  // unfused-GELU path computes it (linear without bias, then bias_gelu). K 1,500 (two blocks):
  // GELU on the finished sums, i.e. gelu of the bias-in-the-store result. Edge shapes: one row,
  // odd sizes, one past a tile; C's row gaps untouched; every other entry of C overwritten.
  struct Shape3 { int64_t M, N, K; };
  for (const Shape3 c : {Shape3{1, 3, 5}, Shape3{33, 65, 33}, Shape3{300, 100, 97}, Shape3{70, 2048, 512},
                         Shape3{40, 48, 1500}})
    for (bool tb : {true, false}) {
      CAPTURE(c.M);
      CAPTURE(c.N);
      CAPTURE(c.K);
      CAPTURE(tb);
      const int64_t lda = c.K + 3, ldb = (tb ? c.K : c.N) + 5, ldc = c.N + 7;
      const auto A = randoms(size_t(c.M * lda), 1), B = randoms(size_t((tb ? c.N : c.K) * ldb), 2);
      const auto bias = randoms(size_t(c.N), 3);
      std::vector<float> fused = randoms(size_t(c.M * ldc), 4), want = fused, y(size_t(c.M * c.N));
      amx_bf16_gemm(false, tb, c.M, c.N, c.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, fused.data(), ldc,
                    bias.data(), /*gelu=*/true);
      const bool deep = c.K > 1024;
      amx_bf16_gemm(false, tb, c.M, c.N, c.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, y.data(), c.N,
                    deep ? bias.data() : nullptr);
      const std::vector<float> zero(size_t(c.N), 0.0f);
      std::vector<float> g(y.size());
      bias_gelu_forward<float>(g.data(), y.data(), deep ? zero.data() : bias.data(), c.M, c.N);
      for (int64_t i = 0; i < c.M; ++i) std::copy(g.begin() + i * c.N, g.begin() + (i + 1) * c.N, want.begin() + i * ldc);
      int differ = 0;
      for (size_t i = 0; i < fused.size(); ++i)
        differ += std::bit_cast<uint32_t>(fused[i]) != std::bit_cast<uint32_t>(want[i]);
      CHECK(differ == 0);
    }
  // the frozen form (a weight packed once) gives the same bits
  const int64_t rows = 37, out = 130, in = 96;
  const auto x = randoms(size_t(rows * in), 5), W = randoms(size_t(out * in), 6), b = randoms(size_t(out), 7);
  std::vector<float> once(size_t(rows * out)), every(size_t(rows * out));
  amx_bf16_linear(once.data(), out, x.data(), in, rows, *amx_bf16_pack(W.data(), in, out, in), b.data(), true);
  amx_bf16_gemm(false, true, rows, out, in, 1.0f, x.data(), in, W.data(), in, 0.0f, every.data(), out, b.data(), true);
  CHECK(once == every);
}

TEST_CASE("gemm_bias_gelu: taken under --precision bf16 on AMX only, C untouched where declined") {
  const int64_t M = 64, N = 64, K = 64;  // 262,144 multiply-adds ≥ kAmxMinWork
  const auto A = randoms(size_t(M * K), 1), B = randoms(size_t(N * K), 2), bias = randoms(size_t(N), 3);
  const std::vector<float> C0 = randoms(size_t(M * N), 4);
  std::vector<float> C = C0;
  CHECK_FALSE(gemm_bias_gelu(true, M, N, K, A.data(), K, B.data(), K, bias.data(), C.data(), N));  // fp32
  CHECK(C == C0);
  set_cpu_gemm_precision(GemmPrecision::bf16);
  const bool taken = gemm_bias_gelu(true, M, N, K, A.data(), K, B.data(), K, bias.data(), C.data(), N);
  set_amx_bf16_enabled(false);  // --amx off: the caller composes
  std::vector<float> off = C0;
  const bool taken_off = gemm_bias_gelu(true, M, N, K, A.data(), K, B.data(), K, bias.data(), off.data(), N);
  set_amx_bf16_enabled(true);
  set_cpu_gemm_precision(GemmPrecision::fp32);
  CHECK_FALSE(taken_off);
  CHECK(off == C0);
  CHECK(taken == amx_bf16_available());
  if (!amx_bf16_available()) return test::skip("this CPU has no AMX-BF16: only the refusals ran");
  std::vector<float> want(size_t(M * N));
  amx_bf16_gemm(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, want.data(), N, bias.data(), true);
  CHECK(C == want);
}
