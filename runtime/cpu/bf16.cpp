// runtime/cpu/bf16.cpp — bf16 rounding arrays and the bf16 GEMM's two paths (see
// runtime/kernels/bf16.h): emulated (widen to fp32, our fp32 GEMM) and AVX512-BF16 (pack, then
// the vdpbf16ps microkernel of bf16_gemm_avx512.cpp).
#include "runtime/kernels/bf16.h"

#include <algorithm>
#include <vector>

#include "runtime/cpu/bf16_tile.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"

namespace mase::cpu {

void bf16_from_f32(uint16_t* out, const float* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = bf16_from_f32(x[i]);
  });
}

void bf16_round(float* out, const float* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = bf16_round(x[i]);
  });
}

const char* bf16_isa_name(Bf16Isa isa) {
  return isa == Bf16Isa::avx512_bf16 ? "avx512-bf16" : "emulated";
}

bool bf16_isa_supported(Bf16Isa isa) {
  const CpuFeatures& f = cpu_features();
  return isa == Bf16Isa::emulated || (f.avx512() && f.avx512_bf16);
}

Bf16Isa bf16_isa_best() {
  return bf16_isa_supported(Bf16Isa::avx512_bf16) ? Bf16Isa::avx512_bf16 : Bf16Isa::emulated;
}

namespace {

// Widen bf16 rows to fp32 (exact) and run the fp32 GEMM: the products of the rounded operands.
void emulated(float* C, int64_t ldc, const uint16_t* A, int64_t lda, const uint16_t* B,
              int64_t ldb, int64_t M, int64_t N, int64_t K, const float* bias) {
  std::vector<float> a(size_t(M * K)), b(size_t(N * K));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) a[size_t(i * K + k)] = f32_from_bf16(A[i * lda + k]);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) b[size_t(j * K + k)] = f32_from_bf16(B[j * ldb + k]);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = bias ? bias[j] : 0.0f;
  if (K > 0) gemm<float>(false, true, M, N, K, 1.0f, a.data(), K, b.data(), K, 1.0f, C, ldc);
}

void avx512_bf16(float* C, int64_t ldc, const uint16_t* A, int64_t lda, const uint16_t* B,
                 int64_t ldb, int64_t M, int64_t N, int64_t K, const float* bias) {
  const int64_t pairs = (K + 1) / 2, kp = 2 * pairs, nr = kBf16NR, panels = (N + nr - 1) / nr;
  // B: per panel, per pair of k, 32 columns × (k, k+1); zeros past N and past K
  std::vector<uint16_t> bp(size_t(panels * pairs * nr * 2), 0);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k)
      bp[size_t(((j / nr) * pairs + k / 2) * nr * 2 + (j % nr) * 2 + k % 2)] = B[j * ldb + k];
  // A: rows padded to an even K
  std::vector<uint16_t> ap(size_t(M * kp), 0);
  for (int64_t i = 0; i < M; ++i) std::copy(A + i * lda, A + i * lda + K, ap.begin() + i * kp);
  const int64_t MR = kBf16MR, blocks = (M + MR - 1) / MR;
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk)
      for (int64_t p = 0; p < panels; ++p) {
        Bf16Tile t{};
        t.mr = int(std::min(MR, M - blk * MR));
        t.nv = int(std::min(nr, N - p * nr));
        t.a = ap.data() + blk * MR * kp;
        t.lda = kp;
        t.b = bp.data() + p * pairs * nr * 2;
        t.pairs = pairs;
        t.c = C + blk * MR * ldc + p * nr;
        t.ldc = ldc;
        t.bias = bias ? bias + p * nr : nullptr;
        bf16_tile_avx512(t);
      }
  });
}

}  // namespace

void bf16_gemm(float* C, int64_t ldc, const uint16_t* A, int64_t lda, const uint16_t* B,
               int64_t ldb, int64_t M, int64_t N, int64_t K, const float* bias, Bf16Isa isa) {
  MASE_CHECK(M >= 0 && N >= 0 && K >= 0, ShapeError, "[bf16_gemm] expected sizes ≥ 0, got M=", M,
             " N=", N, " K=", K);
  MASE_CHECK(bf16_isa_supported(isa), ConfigError, "[bf16_gemm] this CPU cannot run the ",
             bf16_isa_name(isa), " kernel");
  if (M == 0 || N == 0) return;
  if (isa == Bf16Isa::avx512_bf16) avx512_bf16(C, ldc, A, lda, B, ldb, M, N, K, bias);
  else emulated(C, ldc, A, lda, B, ldb, M, N, K, bias);
}

}  // namespace mase::cpu
