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
// (cublasSetWorkspace) so it never allocates while a step is being captured.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/matmul.h"

namespace mase::cuda {
namespace {

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(cat("[gemm] ", what, " failed with cuBLAS status ", static_cast<int>(s)));
}

GemmPrecision g_precision = GemmPrecision::fp32;

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t x;
    if (cublasCreate(&x) != CUBLAS_STATUS_SUCCESS) throw DeviceError("[gemm] cublasCreate failed");
    check(cublasSetStream(x, stream()), "cublasSetStream");  // cuda/stream.h
    // a workspace of our own (32 MiB, NVIDIA's advice for Hopper): cuBLAS then never allocates
    // inside a call, which a CUDA graph capture would not allow. Kept for the process's life.
    constexpr size_t kWorkspace = 32u << 20;
    void* ws = nullptr;
    MASE_CUDA_CHECK(cudaMalloc(&ws, kWorkspace));
    check(cublasSetWorkspace(x, ws, kWorkspace), "cublasSetWorkspace");
    check(cublasSetMathMode(x, g_precision == GemmPrecision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                  : CUBLAS_DEFAULT_MATH),
          "cublasSetMathMode");
    return x;
  }();
  return h;
}

cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

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

// A device buffer for the pointer arrays, grown on demand and never freed: a captured graph
// keeps using the address it saw, and stream order makes one buffer safe to reuse (each
// batched GEMM reads it before the next pointer kernel overwrites it).
const float** pointer_scratch(int64_t count) {
  static std::mutex mu;
  static std::vector<void*> buffers;  // every buffer ever made (graphs may hold old ones)
  static int64_t capacity = 0;
  std::lock_guard lock(mu);
  if (count > capacity) {
    capacity = std::max<int64_t>(count, 2 * capacity);
    void* p = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;  // see cuda/memory.cu
    MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t err = cudaMalloc(&p, static_cast<size_t>(capacity) * sizeof(float*));
    MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    MASE_CUDA_CHECK(err);
    buffers.push_back(p);
  }
  return static_cast<const float**>(buffers.back());
}

}  // namespace

void set_gemm_precision(GemmPrecision p) {
  g_precision = p;
  check(cublasSetMathMode(handle(), p == GemmPrecision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                             : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode");
}

GemmPrecision gemm_precision() { return g_precision; }

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  check(cublasSgemm(handle(), op(tb), op(ta), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasSgemm");
}

void gemm_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                  int64_t batch, const int64_t* a_off, const int64_t* b_off, const int64_t* c_off) {
  if (batch <= 0 || M == 0 || N == 0) return;
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
