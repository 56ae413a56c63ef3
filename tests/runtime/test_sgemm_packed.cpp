// tests/runtime/test_sgemm_packed.cpp — the packed fp32 GEMM (runtime/kernels/sgemm_packed.h):
// each ISA's microkernel against a scalar loop doing the same fmas in the same order (so bit
// for bit), on sizes that cut every tile (rows past MR, columns past nr, K = 1); strided A;
// bias; each ISA case *skipped* on a CPU without it.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/error.h"
#include "runtime/kernels/sgemm_packed.h"

using namespace mase;
using namespace mase::cpu;

using test::random_floats;

namespace {

// C[i][j] = fma chain over k in order, then + bias: the microkernels' exact arithmetic.
std::vector<float> reference(const std::vector<float>& A, int64_t lda, const std::vector<float>& B,
                             const float* bias, int64_t M, int64_t N, int64_t K) {
  std::vector<float> C(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(A[size_t(i * lda + k)], B[size_t(j * K + k)], acc);
      C[size_t(i * N + j)] = bias ? acc + bias[j] : acc;
    }
  return C;
}

void check_isa(F32Isa isa) {
  if (!f32_isa_supported(isa)) return test::skip(std::string("this CPU has no ") + f32_isa_name(isa));
  // kSgemmMC + 7 rows: two row blocks, the second a part tile; 2·kSgemmKC + 88: three slices of
  // K, the later ones continuing the first one's sums through C
  for (int64_t M : {int64_t(1), int64_t(7), int64_t(13), kSgemmMC + 7})
    for (int64_t N : {1, 15, 33, 64})
      for (int64_t K : {int64_t(1), int64_t(9), int64_t(130), 2 * kSgemmKC + 88})
        for (bool with_bias : {false, true}) {
          const int64_t lda = K + 3;  // A read in place from a wider matrix
          const auto A = random_floats(M * lda, uint32_t(M + 100 * K));
          const auto B = random_floats(N * K, uint32_t(N + 7 * K));
          const auto bias = random_floats(N, 5);
          const float* bp = with_bias ? bias.data() : nullptr;
          const F32PackedB p = sgemm_pack_b(B.data(), K, N, K, isa);
          std::vector<float> C(static_cast<size_t>(M * N), NAN);
          sgemm_packed(C.data(), N, A.data(), lda, M, p, bp);
          const auto want = reference(A, lda, B, bp, M, N, K);
          INFO(f32_isa_name(isa), " M=", M, " N=", N, " K=", K, " bias=", with_bias);
          CHECK(std::memcmp(C.data(), want.data(), C.size() * 4) == 0);
        }
}

}  // namespace

TEST_CASE("sgemm packed: avx512 equals the fma loop bit for bit on odd sizes") {
  check_isa(F32Isa::avx512);
}

TEST_CASE("sgemm packed: avx2 equals the fma loop bit for bit on odd sizes") {
  check_isa(F32Isa::avx2);
}

TEST_CASE("sgemm packed: hand-checked values and errors") {
  // A = [[1, 2], [3, 4]], B = W = [[1, 0], [1, 1], [0, -1]]: C = A·Bᵀ = [[1, 3, -2], [3, 7, -4]]
  const std::vector<float> A = {1, 2, 3, 4}, B = {1, 0, 1, 1, 0, -1}, bias = {0.5f, 0, 1};
  const F32PackedB p = sgemm_pack_b(B.data(), 2, 3, 2, f32_isa_best());
  std::vector<float> C(6);
  sgemm_packed(C.data(), 3, A.data(), 2, 2, p, bias.data());
  CHECK(C == std::vector<float>{1.5f, 3, -1, 3.5f, 7, -3});
  CHECK_THROWS_AS(sgemm_pack_b(B.data(), 2, -1, 2, f32_isa_best()), ShapeError);
}
