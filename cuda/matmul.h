// cuda/matmul.h — twin of runtime/cpu/matmul.h on cuBLAS (f32, row-major like the CPU side).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

MASE_CUDA_FN(void, gemm, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                          float* C, int64_t ldc))
MASE_CUDA_FN(void, gemm_batched, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                  float alpha, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float beta, float* C, int64_t ldc, int64_t batch,
                                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off))

}  // namespace mase::cuda
