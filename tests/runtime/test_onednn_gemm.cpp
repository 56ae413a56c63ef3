// tests/runtime/test_onednn_gemm.cpp — cpu::gemm<float> on oneDNN's matmul
// (runtime/cpu/onednn_gemm.h) against a double-precision loop, on problems large enough to
// take it: every transpose form, leading dimensions wider than the matrix, alpha and beta
// (output scale, sum post-op), odd sizes; and the same call with oneDNN switched off
// (OpenBLAS) within fp32 reassociation. *Skipped* in a build without libdnnl-dev.
#include <cmath>
#include <filesystem>
#include <random>
#include <tuple>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu_features.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

using namespace mase;

using test::random_floats;

namespace {

// One GEMM problem as BLAS stores it: A is M×K (K×M when transposed), B is K×N (N×K), each
// with 3 spare columns, and C's spare columns must stay untouched.
struct Problem {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  std::vector<float> A, B, C0;
  Problem(bool ta_, bool tb_, int64_t M_, int64_t N_, int64_t K_, uint64_t seed)
      : ta(ta_), tb(tb_), M(M_), N(N_), K(K_) {
    const int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    lda = ac + 3, ldb = bc + 3, ldc = N + 3;
    A = random_floats(ar * lda, seed), B = random_floats(br * ldb, seed + 1);
    C0 = random_floats(M * ldc, seed + 2);
  }
  float a(int64_t i, int64_t k) const { return ta ? A[k * lda + i] : A[i * lda + k]; }
  float b(int64_t k, int64_t j) const { return tb ? B[j * ldb + k] : B[k * ldb + j]; }
  // alpha·Σ_k f(a)·f(b) + beta·C0, in double
  template <class F>
  double ref(int64_t i, int64_t j, float alpha, float beta, F f) const {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += double(f(a(i, k))) * double(f(b(k, j)));
    return alpha * s + beta * double(C0[i * ldc + j]);
  }
  // the largest |C - (A·op(B) + bias)| over C's M × N, against double
  double worst_linear(const std::vector<float>& C, const std::vector<float>& bias) const {
    double worst = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        worst = std::max(worst, std::abs(C[i * ldc + j] - (ref(i, j, 1.0f, 0.0f, [](float x) {
                                                              return x;
                                                            }) + bias[size_t(j)])));
    return worst;
  }
};

}  // namespace

TEST_CASE("oneDNN sgemm: every transpose form, leading dims, alpha and beta vs double") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(true);
  const int64_t M = 301, N = 129, K = 257;  // M·N·K ≈ 10M ≥ kOnednnMinWork: oneDNN takes it
  REQUIRE(double(M) * N * K >= cpu::kOnednnMinWork);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(alpha);
        CAPTURE(beta);
        const Problem p(ta, tb, M, N, K, 1);
        const auto& [A, B, C0] = std::tie(p.A, p.B, p.C0);
        const int64_t lda = p.lda, ldb = p.ldb, ldc = p.ldc;
        std::vector<float> C = C0, Cb = C0;
        REQUIRE(cpu::onednn_sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta,
                                  C.data(), ldc));
        cpu::set_onednn_enabled(false);  // the same call on OpenBLAS
        cpu::gemm<float>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, Cb.data(), ldc);
        cpu::set_onednn_enabled(true);
        double worst = 0, worst_blas = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const double ref = p.ref(i, j, alpha, beta, [](float x) { return x; });
            worst = std::max(worst, std::abs(C[i * ldc + j] - ref));
            worst_blas = std::max(worst_blas, std::abs(double(C[i * ldc + j]) - Cb[i * ldc + j]));
          }
        CHECK(worst < 1e-4);       // K = 257 products of magnitude ≤ 1: ~1e-5 of fp32 rounding
        CHECK(worst_blas < 1e-4);  // and OpenBLAS agrees to reassociation
        for (int64_t i = 0; i < M; ++i)  // the spare columns of C are never written
          for (int64_t j = N; j < ldc; ++j) CHECK(C[i * ldc + j] == C0[i * ldc + j]);
      }
  cpu::set_onednn_enabled(was);
}

TEST_CASE("oneDNN sgemm: switched off, or a small problem, it is not used") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(false);
  std::vector<float> A(64 * 64, 1.0f), B(64 * 64, 1.0f), C(64 * 64, 0.0f);
  CHECK_FALSE(cpu::onednn_sgemm(false, false, 64, 64, 64, 1.0f, A.data(), 64, B.data(), 64, 0.0f,
                                C.data(), 64));
  cpu::set_onednn_enabled(was);
}

// A weight gradient's shape (dW = dYᵀ·X: A transposed, K = B·T rows, deeper than
// kOnednnMaxNK): OpenBLAS's where it runs native AVX-512 kernels, oneDNN's where OpenBLAS's
// kernels are narrower than the CPU (Debian's OpenBLAS on AMD Zen 4/5) — bit for bit the
// library's own call, either way, and right against double.
TEST_CASE("gemm<float>: a deep weight gradient goes to the library openblas_narrower_than_cpu names") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(true);
  const int64_t M = 48, N = 40, K = 4 * cpu::kOnednnMaxNK + 7;  // M·N·K ≈ 16M ≥ kOnednnMinWork
  REQUIRE(double(M) * N * K >= cpu::kOnednnMinWork);
  const Problem p(true, false, M, N, K, 7);
  std::vector<float> C = p.C0, lib = p.C0;
  cpu::gemm<float>(true, false, M, N, K, 1.0f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.0f,
                   C.data(), p.ldc);
  const bool onednn = cpu::openblas_narrower_than_cpu();
  INFO("OpenBLAS core ", blas::corename(), onednn ? ": oneDNN expected" : ": OpenBLAS expected");
  if (onednn) {
    REQUIRE(cpu::onednn_sgemm(true, false, M, N, K, 1.0f, p.A.data(), p.lda, p.B.data(), p.ldb,
                              0.0f, lib.data(), p.ldc));
  } else {
    blas::sgemm(blas::DoTrans, blas::NoTrans, int(M), int(N), int(K), 1.0f, p.A.data(),
                int(p.lda), p.B.data(), int(p.ldb), 0.0f, lib.data(), int(p.ldc));
  }
  double worst = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      CHECK(C[i * p.ldc + j] == lib[i * p.ldc + j]);
      worst = std::max(worst, std::abs(C[i * p.ldc + j] -
                                       p.ref(i, j, 1.0f, 0.0f, [](float x) { return x; })));
    }
  CHECK(worst < 1e-3);  // 8199 products of magnitude ≤ 1
  CHECK((mase::gemm_library().find("all of them") != std::string::npos) == onednn);
  cpu::set_onednn_enabled(was);
}

// --precision bf16 on oneDNN's bf16 matmul (forced here: on a CPU without AMX-BF16 or
// AVX512-BF16 it would decline, slower than our emulation): the operands rounded to bf16 by
// our rounding, products exact in fp32, fp32 sums — so against a double loop over the ROUNDED
// operands it is within fp32 reassociation, in every transpose form with alpha and beta.
TEST_CASE("oneDNN bf16 gemm (--precision bf16): rounded operands, fp32 sums, vs double") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(true);
  cpu::set_onednn_bf16_forced(true);
  REQUIRE(cpu::onednn_bf16_active());
  set_cpu_gemm_precision(GemmPrecision::bf16);
  const int64_t M = 301, N = 129, K = 257;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(alpha);
        const Problem p(ta, tb, M, N, K, 4);
        std::vector<float> C = p.C0;
        cpu::gemm<float>(ta, tb, M, N, K, alpha, p.A.data(), p.lda, p.B.data(), p.ldb, beta,
                         C.data(), p.ldc);
        double worst = 0, worst_unrounded = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const double got = C[i * p.ldc + j];
            const auto bf16 = [](float x) { return cpu::bf16_round(x); };
            worst = std::max(worst, std::abs(got - p.ref(i, j, alpha, beta, bf16)));
            worst_unrounded = std::max(
                worst_unrounded, std::abs(got - p.ref(i, j, alpha, beta, [](float x) { return x; })));
          }
        CHECK(worst < 1e-4);           // the rounded operands' products, summed in fp32
        CHECK(worst_unrounded > 1e-3);  // and not the fp32 product: bf16 rounding happened
      }
  // the Linear's forward, the bias in the store (onednn_bf16_gemm_bias), both layouts of W
  const std::vector<float> bias = random_floats(N, 5);
  for (bool tb : {true, false}) {
    CAPTURE(tb);
    const Problem p(false, tb, M, N, K, 6);
    std::vector<float> C = p.C0;
    if (!cpu::onednn_bf16_gemm_bias(tb, M, N, K, p.A.data(), p.lda, p.B.data(), p.ldb,
                                    bias.data(), C.data(), p.ldc)) {
      // forced on a CPU without bf16 units (MASE_MAX_CPU_ISA=avx2 in CI), oneDNN 2.6 has no
      // bf16 matmul with a bias and it declines, C untouched (cpu::gemm_bias then fills C with
      // the bias and runs the plain bf16 GEMM); where the units exist it must run
      CHECK_FALSE(cpu_features().avx512_bf16);
      CHECK(C == p.C0);
      test::skip("oneDNN declines a bf16 matmul with a bias without bf16 units: that half");
      continue;
    }
    double worst = 0;
    const auto bf16 = [](float x) { return cpu::bf16_round(x); };
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        worst = std::max(worst, std::abs(C[i * p.ldc + j] -
                                          (p.ref(i, j, 1.0f, 0.0f, bf16) + bias[size_t(j)])));
    CHECK(worst < 1e-4);
    for (int64_t i = 0; i < M; ++i)  // the spare columns of C are never written
      for (int64_t j = N; j < p.ldc; ++j) CHECK(C[i * p.ldc + j] == p.C0[i * p.ldc + j]);
  }
  set_cpu_gemm_precision(GemmPrecision::fp32);
  cpu::set_onednn_bf16_forced(false);
  cpu::set_onednn_enabled(was);
}

// The Linear's forward with the bias in the store (cpu::gemm_bias, runtime/kernels/matmul.h):
// on oneDNN the bias argument, elsewhere a copy into C and beta = 1; both against double.
TEST_CASE("gemm_bias: x·Wᵀ + bias on oneDNN (bias argument) and on OpenBLAS (copy, beta 1)") {
  const int64_t M = 301, N = 129, K = 257;
  const Problem p(false, true, M, N, K, 7);
  const std::vector<float> bias = random_floats(N, 9);
  const bool was = cpu::onednn_enabled();
  for (bool onednn : {true, false}) {
    CAPTURE(onednn);
    if (onednn && cpu::onednn_version().empty()) {
      test::skip("this build has no oneDNN (libdnnl-dev): the OpenBLAS half only");
      continue;
    }
    cpu::set_onednn_enabled(onednn);
    std::vector<float> C = p.C0;
    cpu::gemm_bias<float>(true, M, N, K, p.A.data(), p.lda, p.B.data(), p.ldb, bias.data(), C.data(),
                          p.ldc);
    CHECK(p.worst_linear(C, bias) < 1e-4);
    for (int64_t i = 0; i < M; ++i)  // the spare columns of C are never written
      for (int64_t j = N; j < p.ldc; ++j) CHECK(C[i * p.ldc + j] == p.C0[i * p.ldc + j]);
  }
  cpu::set_onednn_enabled(was);
}

// oneDNN runs in blocks of rows on our threads, each block single-threaded (onednn_gemm.cpp,
// "one pool owns the cores"): 1 thread (one block) and 2 (two blocks) agree within fp32
// reassociation (oneDNN may block K differently for another M: on AVX-512 the bits matched, on
// AVX2 they did not), the same thread count gives the same bits every time, and libgomp starts
// no threads of its own (the process's thread count does not grow).
TEST_CASE("oneDNN in row blocks: 1 and 2 threads agree, repeats are bitwise, no OpenMP team") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  const int threads = num_threads();
  cpu::set_onednn_enabled(true);
  auto count_threads = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.exists();
    return n;
  };
  set_num_threads(2);
  parallel_for(0, 1 << 16, 1, [](int64_t, int64_t) {});  // our pool's threads exist
  const int before = count_threads();  // (ctest runs each case in a process of its own)
  const int64_t M = 301, N = 129, K = 257;
  for (bool ta : {false, true}) {
    CAPTURE(ta);
    const Problem p(ta, true, M, N, K, 11);
    std::vector<float> C1 = p.C0, C2 = p.C0, C3;
    set_num_threads(1);
    REQUIRE(cpu::onednn_sgemm(ta, true, M, N, K, 1.0f, p.A.data(), p.lda, p.B.data(), p.ldb, 0.5f,
                              C1.data(), p.ldc));
    set_num_threads(2);
    for (int r = 0; r < 3; ++r) {
      C3 = C2;
      C2 = p.C0;
      REQUIRE(cpu::onednn_sgemm(ta, true, M, N, K, 1.0f, p.A.data(), p.lda, p.B.data(), p.ldb,
                                0.5f, C2.data(), p.ldc));
      if (r > 0) CHECK(C2 == C3);  // deterministic at a fixed thread count
    }
    double worst = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        worst = std::max(worst, std::abs(double(C1[i * p.ldc + j]) - C2[i * p.ldc + j]));
        const double ref = p.ref(i, j, 1.0f, 0.5f, [](float x) { return x; });
        CHECK(std::abs(C2[i * p.ldc + j] - ref) < 1e-4);  // and right, in every block
      }
    CHECK(worst < 1e-4);
  }
  CHECK(count_threads() <= before);
  set_num_threads(threads);
  cpu::set_onednn_enabled(was);
}

// Weights packed once (freezing): every batch height, from an empty batch to several row blocks
// with a short last one, against double; nothing written for M = 0.
TEST_CASE("oneDNN packed weights: batches of 0 to 301 rows, one block or several, vs double") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(true);
  const int64_t N = 129, K = 257;
  const std::vector<float> W = random_floats(N * K, 21), bias = random_floats(N, 22);
  const auto packed = cpu::onednn_f32_pack(W.data(), K, N, K);
  REQUIRE(packed);
  for (int64_t M : {0, 1, 15, 16, 17, 31, 33, 301}) {
    CAPTURE(M);
    const std::vector<float> A = random_floats(std::max<int64_t>(M, 1) * K, 23);
    std::vector<float> C(size_t(std::max<int64_t>(M, 1) * N), -7.0f);
    cpu::onednn_packed_linear(C.data(), N, A.data(), K, M, *packed, bias.data());
    if (M == 0) CHECK(C[0] == -7.0f);
    double worst = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = bias[size_t(j)];
        for (int64_t k = 0; k < K; ++k) ref += double(A[size_t(i * K + k)]) * W[size_t(j * K + k)];
        worst = std::max(worst, std::abs(C[size_t(i * N + j)] - ref));
      }
    CHECK(worst < 1e-4);
  }
  cpu::set_onednn_enabled(was);
}

// The same weights rounded to bf16 once and packed as bf16 (frozen eval under --precision bf16
// without AMX): each call rounds A; the sums are of the rounded operands (checked against
// double on them), which are not fp32's (checked against double on the fp32 operands), and
// the copy is smaller than an fp32 one. oneDNN's bf16 forced on, so any CPU checks the numbers.
TEST_CASE("oneDNN packed bf16 weights: rounded once, A rounded per call, batches of 0 to 301 rows") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  cpu::set_onednn_enabled(true);
  cpu::set_onednn_bf16_forced(true);
  const int64_t N = 129, K = 257, ldw = K + 3;  // W as rows of a wider matrix
  const std::vector<float> W = random_floats(N * ldw, 31), bias = random_floats(N, 32);
  const auto packed = cpu::onednn_bf16_pack(W.data(), ldw, N, K);
  const auto f32 = cpu::onednn_f32_pack(W.data(), ldw, N, K);
  if (!packed) {  // oneDNN 2.6 below AVX-512 (an AVX2-only CPU, or capped to one) refuses it
    cpu::set_onednn_bf16_forced(false);
    cpu::set_onednn_enabled(was);
    return test::skip("oneDNN has no bf16 matmul on packed weights for this CPU (below AVX-512)");
  }
  REQUIRE(f32);
  CHECK(cpu::onednn_packed_bf16(*packed));
  CHECK_FALSE(cpu::onednn_packed_bf16(*f32));
  // smaller than the fp32 copy (half of it for BERT's sizes; here both are padded to blocks)
  CHECK(cpu::onednn_packed_bytes(*packed) < cpu::onednn_packed_bytes(*f32));
  const auto r = [](float x) { return double(cpu::bf16_round(x)); };
  for (int64_t M : {0, 1, 17, 301}) {
    CAPTURE(M);
    const int64_t lda = K + 1;
    const std::vector<float> A = random_floats(std::max<int64_t>(M, 1) * lda, 33);
    std::vector<float> C(size_t(std::max<int64_t>(M, 1) * N), -7.0f);
    cpu::onednn_packed_linear(C.data(), N, A.data(), lda, M, *packed, bias.data());
    if (M == 0) CHECK(C[0] == -7.0f);
    double worst = 0, from_f32 = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = bias[size_t(j)], exact = ref;
        for (int64_t k = 0; k < K; ++k) {
          const float a = A[size_t(i * lda + k)], w = W[size_t(j * ldw + k)];
          ref += r(a) * r(w);
          exact += double(a) * w;
        }
        worst = std::max(worst, std::abs(C[size_t(i * N + j)] - ref));
        from_f32 = std::max(from_f32, std::abs(C[size_t(i * N + j)] - exact));
      }
    CHECK(worst < 1e-4);
    if (M > 0) CHECK(from_f32 > 1e-3);  // bf16 operands, really
  }
  cpu::set_onednn_bf16_forced(false);
  cpu::set_onednn_enabled(was);
}

// A batch with too few rows to give each thread a block of 16 (one short sequence) is cut into
// blocks of columns instead (onednn_gemm.cpp, blocked_matmul): B, C and the bias from column
// c0, a short last block; every transpose form, alpha, beta and the bias, against double.
TEST_CASE("oneDNN with few rows: blocks of columns, every transpose form and the bias") {
  if (cpu::onednn_version().empty()) return test::skip("this build has no oneDNN (libdnnl-dev)");
  const bool was = cpu::onednn_enabled();
  const int threads = num_threads();
  cpu::set_onednn_enabled(true);
  set_num_threads(2);
  const int64_t N = 300, K = 257;  // 300 = 192 + a short last block of 108
  for (int64_t M : {1, 5, 31}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(M);
        CAPTURE(ta);
        CAPTURE(tb);
        const Problem p(ta, tb, M, N, K, 31);
        std::vector<float> C = p.C0;
        REQUIRE(cpu::onednn_sgemm(ta, tb, M, N, K, -0.5f, p.A.data(), p.lda, p.B.data(), p.ldb,
                                  0.25f, C.data(), p.ldc));
        double worst = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            worst = std::max(worst, std::abs(C[i * p.ldc + j] -
                                             p.ref(i, j, -0.5f, 0.25f, [](float x) { return x; })));
        CHECK(worst < 1e-4);
        for (int64_t i = 0; i < M; ++i)  // the spare columns of C are never written
          for (int64_t j = N; j < p.ldc; ++j) CHECK(C[i * p.ldc + j] == p.C0[i * p.ldc + j]);
      }
    const Problem p(false, true, M, N, K, 37);  // and the Linear's forward, bias in the store
    const std::vector<float> bias = random_floats(N, 38);
    std::vector<float> C = p.C0;
    REQUIRE(cpu::onednn_sgemm_bias(true, M, N, K, p.A.data(), p.lda, p.B.data(), p.ldb,
                                   bias.data(), C.data(), p.ldc));
    CHECK(p.worst_linear(C, bias) < 1e-4);
  }
  set_num_threads(threads);
  cpu::set_onednn_enabled(was);
}
