// cuda/matmul.cu — GEMM on cuBLAS (twin of runtime/cpu/matmul.cpp).
//
// cuBLAS is column-major. A row-major C = op(A)·op(B) is, read column-major, Cᵀ = op(B)ᵀ·op(A)ᵀ:
// so we call cuBLAS with the operands swapped (B first) and M/N swapped, and no copies.
#include <cublas_v2.h>

#include <vector>

#include "cuda/check.h"
#include "runtime/kernels/matmul.h"

namespace mase::cuda {
namespace {

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t x;
    if (cublasCreate(&x) != CUBLAS_STATUS_SUCCESS) throw DeviceError("[gemm] cublasCreate failed");
    // the stream our kernels use (--default-stream per-thread): ordered with them, capturable
    cublasSetStream(x, cudaStreamPerThread);
    return x;
  }();
  return h;
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(cat("[gemm] ", what, " failed with cuBLAS status ", static_cast<int>(s)));
}

cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  check(cublasSgemm(handle(), op(tb), op(ta), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasSgemm");
}

void gemm_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                  int64_t batch, const int64_t* a_off, const int64_t* b_off, const int64_t* c_off) {
  for (int64_t i = 0; i < batch; ++i)
    gemm(ta, tb, M, N, K, alpha, A + a_off[i], lda, B + b_off[i], ldb, beta, C + c_off[i], ldc);
}

}  // namespace mase::cuda
