// cuda/matmul_bf16.cu — --precision bf16: GEMMs on bf16 tensor cores, accumulated in fp32.
//
// What it is: every tensor stays fp32 — parameters (the master weights), activations,
// gradients, AdamW's state, LayerNorm and softmax statistics, the loss, checkpoints — and each
// GEMM rounds its two inputs to bf16 (round to nearest even: 8 significant bits, fp32's range)
// on the way in, multiplies on the tensor cores and accumulates and writes C in fp32
// (cublasGemmEx, CUBLAS_COMPUTE_32F). That is torch.autocast(bfloat16) for the matmuls, and
// the same numbers: the products of bf16 inputs are exact in fp32 and the sums are fp32.
// What it is not (yet): activations stored in bf16. Each GEMM pays a conversion pass over its
// inputs (read 4 bytes, write 2 per element, ~1/10 of a BERT Linear's GEMM time at bf16
// rate) and the elementwise kernels still move fp32, so the gain over tf32 is the GEMMs' 2x
// tensor-core rate minus those passes.
//
// MASE_BF16_GEMM=fast (an experiment, not the default until measured on a GPU): no conversion
// pass; cuBLAS takes the fp32 inputs and rounds them itself (CUBLAS_COMPUTE_32F_FAST_16BF: "fp32
// in and out, bf16 tensor cores"). It saves the conversion kernels (a third more launches in a
// bf16 step); whether cuBLAS rounds to nearest even as we do is what the GPU run must check
// (the bf16 CPU == CUDA tests compare at bf16 tolerances either way).
//
// The inputs are converted into two grow-only scratch buffers (cuda/cublas.h), one per operand,
// over the span the batch's matrices cover (strided views keep their layout, so the offsets
// and leading dimensions apply unchanged), then cuBLAS runs as in cuda/matmul.cu: one call per
// gemm, strided-batched / pointer-batched / runs for a batch (runtime/kernels/matmul.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda/check.h"
#include "cuda/cublas.h"
#include "cuda/matmul_bf16.h"
#include "cuda/stream.h"
#include "runtime/kernels/matmul.h"

namespace mase::cuda {
namespace {

__global__ void to_bf16_kernel(__nv_bfloat16* dst, const float* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

// Elements from the operand's base pointer to the end of its last matrix: op(X) is rows × cols,
// stored as rows × cols (or cols × rows when transposed) with leading dimension ld.
int64_t span(bool t, int64_t rows, int64_t cols, int64_t ld, int64_t max_offset) {
  const int64_t stored_rows = t ? cols : rows, stored_cols = t ? rows : cols;
  return max_offset + (stored_rows - 1) * ld + stored_cols;
}

// src[0, n) as bf16 in scratch `slot`.
const __nv_bfloat16* converted(int slot, const float* src, int64_t n) {
  auto* dst = static_cast<__nv_bfloat16*>(device_scratch(slot, static_cast<size_t>(n) * 2));
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 4096);
  to_bf16_kernel<<<static_cast<int>(blocks), threads, 0, stream()>>>(dst, src, n);
  MASE_CUDA_CHECK(cudaGetLastError());
  return dst;
}

bool fast_bf16() {  // MASE_BF16_GEMM=fast, read once
  static const bool fast = [] {
    const char* e = std::getenv("MASE_BF16_GEMM");
    return e && std::strcmp(e, "fast") == 0;
  }();
  return fast;
}

// The operands as cuBLAS gets them: converted bf16 copies, or the fp32 tensors themselves with
// the compute type that rounds them (fast).
struct Operands {
  const void *a, *b;
  cudaDataType_t type;
  cublasComputeType_t compute;
  size_t elem;  // bytes per element of a and b
};

// One strided-batched call (count 1 is a plain GEMM) (operands swapped for column-major, as
// in cuda/matmul.cu); offsets in elements.
void strided(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const Operands& op,
             int64_t a_off, int64_t lda, int64_t sa, int64_t b_off, int64_t ldb, int64_t sb,
             float beta, float* C, int64_t ldc, int64_t sc, int64_t count) {
  const char* A = static_cast<const char*>(op.a) + a_off * int64_t(op.elem);
  const char* B = static_cast<const char*>(op.b) + b_off * int64_t(op.elem);
  cublas_check(cublasGemmStridedBatchedEx(cublas_handle(), cublas_op(tb), cublas_op(ta), N, M, K,
                                          &alpha, B, op.type, ldb, sb, A, op.type, lda, sa, &beta,
                                          C, CUDA_R_32F, ldc, sc, count, op.compute,
                                          CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx (bf16)");
}

Operands operands(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                  int64_t max_a, const float* B, int64_t ldb, int64_t max_b) {
  if (fast_bf16()) return {A, B, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, sizeof(float)};
  return {converted(kScratchBf16A, A, span(ta, M, K, lda, max_a)),
          converted(kScratchBf16B, B, span(tb, K, N, ldb, max_b)), CUDA_R_16BF,
          CUBLAS_COMPUTE_32F, 2};
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const Operands op = operands(ta, tb, M, N, K, A, lda, 0, B, ldb, 0);
  strided(ta, tb, M, N, K, alpha, op, 0, lda, 0, 0, ldb, 0, beta, C, ldc, 0, 1);
}

void gemm_batched_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc, int64_t batch, const int64_t* a_off,
                       const int64_t* b_off, const int64_t* c_off) {
  if (batch <= 0 || M == 0 || N == 0) return;
  const int64_t max_a = *std::max_element(a_off, a_off + batch);
  const int64_t max_b = *std::max_element(b_off, b_off + batch);
  const Operands op = operands(ta, tb, M, N, K, A, lda, max_a, B, ldb, max_b);
  BatchGrid g;
  if (batch_grid(batch, a_off, b_off, c_off, &g) && g.inner == batch) {  // one level
    strided(ta, tb, M, N, K, alpha, op, g.first[0], lda, g.inner_stride[0], g.first[1], ldb,
            g.inner_stride[1], beta, C + g.first[2], ldc, g.inner_stride[2], batch);
    return;
  }
  if (batch_grid(batch, a_off, b_off, c_off, &g)) {  // two levels: pointers from the grid
    const void** ptrs = grid_pointers(op.a, op.elem, op.b, op.elem, C, sizeof(float), g, batch);
    cublas_check(cublasGemmBatchedEx(cublas_handle(), cublas_op(tb), cublas_op(ta), N, M, K, &alpha,
                                     ptrs + batch, op.type, ldb, ptrs, op.type, lda, &beta,
                                     const_cast<void* const*>(ptrs + 2 * batch), CUDA_R_32F, ldc,
                                     batch, op.compute, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmBatchedEx (bf16)");
    return;
  }
  for (int64_t i = 0; i < batch;) {  // anything else: runs of evenly spaced matrices
    const int64_t n = strided_run(batch, i, a_off, b_off, c_off);
    const int64_t sa = n > 1 ? a_off[i + 1] - a_off[i] : 0, sb = n > 1 ? b_off[i + 1] - b_off[i] : 0,
                  sc = n > 1 ? c_off[i + 1] - c_off[i] : 0;
    strided(ta, tb, M, N, K, alpha, op, a_off[i], lda, sa, b_off[i], ldb, sb, beta, C + c_off[i],
            ldc, sc, n);
    i += n;
  }
}

}  // namespace mase::cuda
