// cuda/matmul.cu — GEMM on cuBLAS (twin of runtime/cpu/matmul.cpp).
//
// cuBLAS is column-major. A row-major C = op(A)·op(B) is, read column-major, Cᵀ = op(B)ᵀ·op(A)ᵀ:
// so we call cuBLAS with the operands swapped (B first) and M/N swapped, and no copies.
//
// Batches (attention's per-head products) are one cuBLAS call where their layout allows
// (runtime/kernels/matmul.h, batch_grid): cublasSgemmStridedBatched when the matrices are
// evenly spaced, cublasSgemmBatched with device arrays of pointers — written by a small kernel
// into a scratch buffer, so nothing is copied from the host — when they form a two-level grid
// (batch × heads of a head-split view). One launch instead of B·NH launches of small GEMMs.
//
// For CUDA graphs (runtime/kernels/graph_capture.h) cuBLAS gets a workspace of its own
// (cuda/cublas.h) so it never allocates while a step is being captured. --precision bf16 is
// cuda/matmul_bf16.cu.
#include <cublas_v2.h>

#include <cstdlib>
#include <cstring>

#include "cuda/check.h"
#include "cuda/cublas.h"
#include "cuda/matmul_bf16.h"
#include "cuda/stream.h"
#include "runtime/kernels/matmul.h"

namespace mase::cuda {
namespace {

GemmPrecision g_precision = GemmPrecision::fp32;

cublasHandle_t handle() { return cublas_handle(); }  // cuda/cublas.h
void check(cublasStatus_t s, const char* what) { cublas_check(s, what); }
cublasOperation_t op(bool t) { return cublas_op(t); }

bool loop_batches() {  // MASE_GEMM_BATCHED=loop: one GEMM per matrix (the old way, to compare)
  const char* v = std::getenv("MASE_GEMM_BATCHED");
  return v && std::strcmp(v, "loop") == 0;
}

// Every size cuBLAS takes as an int must fit in one (the CPU twin checks the same).
void check_sizes(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc,
                 int64_t batch) {
  for (int64_t v : {M, N, K, lda, ldb, ldc, batch}) cublas_int(v);
}

}  // namespace

void set_gemm_precision(GemmPrecision p) {
  g_precision = p;
  // tf32: the Sgemm family may use TF32 tensor cores; bf16 calls cublasGemmEx itself
  // (cuda/matmul_bf16.cu) and leaves this fp32 path's math mode at the default
  check(cublasSetMathMode(handle(), p == GemmPrecision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                             : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode");
}

GemmPrecision gemm_precision() { return g_precision; }

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  check_sizes(M, N, K, lda, ldb, ldc, 1);
  // K = 0 (C = beta·C) stays on the fp32 path, as on the CPU: there is nothing to round
  if (g_precision == GemmPrecision::bf16 && K > 0) {
    gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  check(cublasSgemm(handle(), op(tb), op(ta), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasSgemm");
}

void gemm_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                  int64_t batch, const int64_t* a_off, const int64_t* b_off, const int64_t* c_off) {
  if (batch <= 0 || M == 0 || N == 0) return;
  check_sizes(M, N, K, lda, ldb, ldc, batch);
  if (g_precision == GemmPrecision::bf16 && K > 0 && !loop_batches()) {
    gemm_batched_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, batch, a_off, b_off,
                      c_off);
    return;
  }
  if (batch == 1 || loop_batches()) {
    for (int64_t i = 0; i < batch; ++i)
      gemm(ta, tb, M, N, K, alpha, A + a_off[i], lda, B + b_off[i], ldb, beta, C + c_off[i], ldc);
    return;
  }
  BatchGrid g;
  if (batch_grid(batch, a_off, b_off, c_off, &g) && g.inner == batch) {
    // one level: evenly spaced matrices (operands swapped for column-major, as in gemm)
    check(cublasSgemmStridedBatched(handle(), op(tb), op(ta), N, M, K, &alpha, B + g.first[1], ldb,
                                    g.inner_stride[1], A + g.first[0], lda, g.inner_stride[0],
                                    &beta, C + g.first[2], ldc, g.inner_stride[2], batch),
          "cublasSgemmStridedBatched");
    return;
  }
  if (batch_grid(batch, a_off, b_off, c_off, &g)) {
    // two levels: one pointer per matrix, computed on the device from the grid (cublas.h)
    const void** ptrs = grid_pointers(A, sizeof(float), B, sizeof(float), C, sizeof(float), g, batch);
    const float* const* pa = reinterpret_cast<const float* const*>(ptrs);
    const float* const* pb = reinterpret_cast<const float* const*>(ptrs + batch);
    float* const* pc = reinterpret_cast<float* const*>(const_cast<void**>(ptrs + 2 * batch));
    check(cublasSgemmBatched(handle(), op(tb), op(ta), N, M, K, &alpha, pb, ldb, pa, lda, &beta,
                             pc, ldc, batch),
          "cublasSgemmBatched");
    return;
  }
  // anything else: runs of evenly spaced matrices, one strided-batched call each
  for (int64_t i = 0; i < batch;) {
    const int64_t n = strided_run(batch, i, a_off, b_off, c_off);
    const int64_t sa = n > 1 ? a_off[i + 1] - a_off[i] : 0, sb = n > 1 ? b_off[i + 1] - b_off[i] : 0,
                  sc = n > 1 ? c_off[i + 1] - c_off[i] : 0;
    check(cublasSgemmStridedBatched(handle(), op(tb), op(ta), N, M, K, &alpha, B + b_off[i], ldb,
                                    sb, A + a_off[i], lda, sa, &beta, C + c_off[i], ldc, sc, n),
          "cublasSgemmStridedBatched");
    i += n;
  }
}

}  // namespace mase::cuda
