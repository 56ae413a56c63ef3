// cuda/matmul_bf16.h — GEMMs with bf16 inputs and fp32 accumulation (--precision bf16), called
// by cuda/matmul.cu's gemm / gemm_batched when that precision is set. Included by .cu only.
#pragma once
#include <cstdint>

namespace mase::cuda {

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm_batched_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc, int64_t batch, const int64_t* a_off,
                       const int64_t* b_off, const int64_t* c_off);

}  // namespace mase::cuda
