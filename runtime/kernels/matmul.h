// runtime/kernels/matmul.h — GEMM through OpenBLAS.
//
// Row-major, as BLAS's CBLAS interface takes it: C (M×N) = alpha·op(A)·op(B) + beta·C with
// op(X) = X or Xᵀ. A transposed *view* needs no copy: it is the same memory read with the
// transpose flag, so ops pass (trans, ld) instead of materialising a transpose.
//
// The contract of the matmul kernels: both backends' signatures side by side, implemented by
// runtime/cpu/matmul.cpp (mase::cpu, templates over float and double) and cuda/matmul.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// `batch` GEMMs of the same sizes; matrix i uses A + a_off[i], B + b_off[i], C + c_off[i].
// Offsets (in elements) let batch dims have any strides, including 0 for a shared operand.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, int64_t batch,
                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/matmul.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, gemm, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                          float* C, int64_t ldc))
MASE_CUDA_FN(void, gemm_batched, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                  float alpha, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float beta, float* C, int64_t ldc, int64_t batch,
                                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off))

}  // namespace mase::cuda
