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

// ---- pointer arrays for cublasSgemmBatched, written on the device ------------------------------

// ptrs[k·batch + i] = base_k + first_k + (i / inner)·outer_k + (i % inner)·inner_k, k = a, b, c
struct PointerGrid {
  const float* base[3];
  int64_t first[3], outer[3], inner_stride[3];
  int64_t inner, batch;
};

__global__ void grid_pointers_kernel(const float** ptrs, PointerGrid g) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= g.batch) return;
  const int64_t o = i / g.inner, r = i % g.inner;
  for (int k = 0; k < 3; ++k)
    ptrs[k * g.batch + i] = g.base[k] + g.first[k] + o * g.outer[k] + r * g.inner_stride[k];
}

// The pointer arrays' device buffer (cuda/cublas.h: grown on demand, never freed).
const float** pointer_scratch(int64_t count) {
  return static_cast<const float**>(
      device_scratch(kScratchPointers, static_cast<size_t>(count) * sizeof(float*)));
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
  if (g_precision == GemmPrecision::bf16) {
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
  if (g_precision == GemmPrecision::bf16 && !loop_batches()) {
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
    // two levels: one pointer per matrix, computed on the device from the grid
    const float** ptrs = pointer_scratch(3 * batch);
    PointerGrid pg{{A, B, C}, {}, {}, {}, g.inner, batch};
    for (int k = 0; k < 3; ++k) {
      pg.first[k] = g.first[k];
      pg.outer[k] = g.outer_stride[k];
      pg.inner_stride[k] = g.inner_stride[k];
    }
    const int threads = 128;
    grid_pointers_kernel<<<static_cast<int>((batch + threads - 1) / threads), threads, 0,
                           stream()>>>(ptrs, pg);
    MASE_CUDA_CHECK(cudaGetLastError());
    const float* const* pa = ptrs;
    const float* const* pb = ptrs + batch;
    float* const* pc = const_cast<float* const*>(ptrs + 2 * batch);
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
