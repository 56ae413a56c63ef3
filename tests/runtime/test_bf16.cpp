// tests/runtime/test_bf16.cpp — bfloat16 (runtime/kernels/bf16.h): round-to-nearest-even on
// every bf16 value, every midpoint between neighbours and the points either side of it; the
// special values; a million random bit patterns against a rounding computed in double; the
// bf16 GEMM (emulated here; the AVX512-BF16 case is *skipped* on CPUs without it); and
// --precision bf16's GEMM mode, which must equal an fp32 GEMM of the rounded operands.
#include <bit>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/error.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"

using namespace mase;
using namespace mase::cpu;

namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// The nearest bf16 to x by arithmetic in double: the two bf16 values around x (truncation and
// the next one up in magnitude), the nearer one, the one with an even pattern on a tie.
uint16_t nearest_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t lo = uint16_t(bits >> 16), hi = uint16_t(lo + 1);
  const double d = std::abs(double(x)), dl = std::abs(double(f32_from_bf16(lo)));
  const double dh = (hi & 0x7fff) >= 0x7f80 ? std::ldexp(1.0, 128) : std::abs(double(f32_from_bf16(hi)));
  if (d - dl < dh - d) return lo;
  if (d - dl > dh - d) return hi;
  return (lo & 1) ? hi : lo;
}

}  // namespace

TEST_CASE("bf16: every bf16 value round-trips and every midpoint rounds to even") {
  int bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t v = uint16_t(b);
    const float f = f32_from_bf16(v);
    if (std::isnan(f)) {
      bad += !std::isnan(f32_from_bf16(bf16_from_f32(f)));
      continue;
    }
    bad += bf16_from_f32(f) != v;
    if ((v & 0x7fff) >= 0x7f80) continue;  // inf: no neighbour above
    const uint32_t mid = (b << 16) | 0x8000u;  // exactly halfway to the next pattern
    const uint16_t even = (v & 1) ? uint16_t(v + 1) : v;
    bad += bf16_from_f32(from_bits(mid)) != even;
    bad += bf16_from_f32(from_bits(mid - 1)) != v;            // just below: down
    bad += bf16_from_f32(from_bits(mid + 1)) != uint16_t(v + 1);  // just above: up
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16: special values") {
  CHECK(bf16_from_f32(0.0f) == 0x0000);
  CHECK(bf16_from_f32(-0.0f) == 0x8000);  // the sign of zero is kept
  CHECK(bf16_from_f32(INFINITY) == 0x7f80);
  CHECK(bf16_from_f32(-INFINITY) == 0xff80);
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(NAN))));
  // a NaN whose payload sits in the low half only would truncate to inf: it must stay NaN
  CHECK(std::isnan(f32_from_bf16(bf16_from_f32(from_bits(0x7f800001u)))));
  CHECK(bf16_from_f32(FLT_MAX) == 0x7f80);  // above bf16's max + half an ulp: inf
  CHECK(bf16_from_f32(from_bits(0x7f7f7fffu)) == 0x7f7f);  // just under the rounding point
  CHECK(bf16_from_f32(1.0f) == 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0, pattern 0x3f80)
  CHECK(bf16_from_f32(1.0f + 0.00390625f) == 0x3f80);
  CHECK(bf16_from_f32(1.0f + 3 * 0.00390625f) == 0x3f82);  // halfway up from 0x3f81: to 0x3f82
  CHECK(bf16_from_f32(1e-40f) == nearest_bf16(1e-40f));     // subnormal
  std::vector<float> x = {1.0f + 0.00390625f, -2.5f, 3.14159265f}, y(3);
  bf16_round(y.data(), x.data(), 3);
  CHECK(y == std::vector<float>{1.0f, -2.5f, 3.140625f});
}

TEST_CASE("bf16: a million random bit patterns against rounding in double") {
  std::mt19937 gen(12);
  int bad = 0;
  for (int i = 0; i < 1000000; ++i) {
    const float x = from_bits(gen());
    if (std::isnan(x)) continue;
    bad += bf16_from_f32(x) != nearest_bf16(x);
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16 gemm: the emulated path is the fp32 product of the rounded operands") {
  const int64_t M = 13, N = 37, K = 29;
  std::mt19937 gen(4);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<uint16_t> A(size_t(M * K)), B(size_t(N * K));
  for (auto& a : A) a = bf16_from_f32(d(gen));
  for (auto& b : B) b = bf16_from_f32(d(gen));
  std::vector<float> bias(static_cast<size_t>(N));
  for (auto& b : bias) b = d(gen);
  std::vector<float> C(size_t(M * N));
  bf16_gemm(C.data(), N, A.data(), K, B.data(), K, M, N, K, bias.data(), Bf16Isa::emulated);
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = bias[size_t(j)], mag = std::abs(ref);
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(f32_from_bf16(A[size_t(i * K + k)])) * f32_from_bf16(B[size_t(j * K + k)]);
        ref += p;
        mag += std::abs(p);
      }
      bad += std::abs(C[size_t(i * N + j)] - ref) > 1e-6 * mag;
    }
  CHECK(bad == 0);
  CHECK_THROWS_AS(bf16_gemm(C.data(), N, A.data(), K, B.data(), K, -1, N, K, nullptr, Bf16Isa::emulated),
                  ShapeError);
}

TEST_CASE("bf16 gemm: avx512-bf16 equals the emulated path within fp32 reassociation") {
  if (!bf16_isa_supported(Bf16Isa::avx512_bf16))
    return test::skip("this CPU has no AVX512-BF16 (vdpbf16ps)");
  for (int64_t M : {1, 7, 50})
    for (int64_t N : {1, 33, 64})
      for (int64_t K : {1, 31, 200}) {
        std::mt19937 gen(uint32_t(M + N + K));
        std::uniform_real_distribution<float> d(-1, 1);
        std::vector<uint16_t> A(size_t(M * K)), B(size_t(N * K));
        for (auto& a : A) a = bf16_from_f32(d(gen));
        for (auto& b : B) b = bf16_from_f32(d(gen));
        std::vector<float> want(size_t(M * N)), got(size_t(M * N));
        bf16_gemm(want.data(), N, A.data(), K, B.data(), K, M, N, K, nullptr, Bf16Isa::emulated);
        bf16_gemm(got.data(), N, A.data(), K, B.data(), K, M, N, K, nullptr, Bf16Isa::avx512_bf16);
        int bad = 0;
        for (size_t i = 0; i < got.size(); ++i) bad += std::abs(got[i] - want[i]) > 1e-5f * float(K);
        INFO("M=", M, " N=", N, " K=", K);
        CHECK(bad == 0);
      }
}

TEST_CASE("gemm precision bf16: every transpose form equals sgemm of the rounded operands") {
  const int64_t M = 9, N = 11, K = 300;
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> A(size_t(M * K)), B(size_t(K * N)), Ar(A.size()), Br(B.size());
  for (auto& a : A) a = d(gen);
  for (auto& b : B) b = d(gen);
  bf16_round(Ar.data(), A.data(), int64_t(A.size()));
  bf16_round(Br.data(), B.data(), int64_t(B.size()));
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t lda = ta ? M : K, ldb = tb ? K : N;  // the same buffers read both ways
      std::vector<float> want(size_t(M * N)), got(size_t(M * N)), plain(size_t(M * N));
      gemm<float>(ta, tb, M, N, K, 1.0f, Ar.data(), lda, Br.data(), ldb, 0.0f, want.data(), N);
      gemm<float>(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, plain.data(), N);
      set_cpu_gemm_precision(GemmPrecision::bf16);
      gemm<float>(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, got.data(), N);
      set_cpu_gemm_precision(GemmPrecision::fp32);
      INFO("ta=", ta, " tb=", tb);
      if (bf16_isa_best() == Bf16Isa::emulated || ta || !tb) CHECK(got == want);
      CHECK(got != plain);  // rounding happened: 300 products of 8-bit operands differ from fp32
    }
}
