// tests/runtime/test_onednn_gemm.cpp — cpu::gemm<float> on oneDNN's matmul
// (runtime/cpu/onednn_gemm.h) against a double-precision loop, on problems large enough to
// take it: every transpose form, leading dimensions wider than the matrix, alpha and beta
// (output scale, sum post-op), odd sizes; and the same call with oneDNN switched off
// (OpenBLAS) within fp32 reassociation. *Skipped* in a build without libdnnl-dev.
#include <cmath>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/onednn_gemm.h"

using namespace mase;

using test::random_floats;

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
        // stored shapes: A is M×K (K×M when transposed), B is K×N (N×K); 3 spare columns each
        const int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
        const int64_t lda = ac + 3, ldb = bc + 3, ldc = N + 3;
        const std::vector<float> A = random_floats(ar * lda, 1), B = random_floats(br * ldb, 2);
        const std::vector<float> C0 = random_floats(M * ldc, 3);
        std::vector<float> C = C0, Cb = C0;
        REQUIRE(cpu::onednn_sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta,
                                  C.data(), ldc));
        cpu::set_onednn_enabled(false);  // the same call on OpenBLAS
        cpu::gemm<float>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, Cb.data(), ldc);
        cpu::set_onednn_enabled(true);
        double worst = 0, worst_blas = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double ref = 0;
            for (int64_t k = 0; k < K; ++k)
              ref += double(ta ? A[k * lda + i] : A[i * lda + k]) *
                     double(tb ? B[j * ldb + k] : B[k * ldb + j]);
            ref = alpha * ref + beta * double(C0[i * ldc + j]);
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
