// cuda/cublas.cu — the shared cuBLAS handle and grow-only device scratch (see cublas.h).
#include <algorithm>
#include <array>
#include <mutex>
#include <vector>

#include "cuda/check.h"
#include "cuda/cublas.h"
#include "cuda/stream.h"

namespace mase::cuda {
namespace {

struct PointerGrid {
  const char* base[3];
  int64_t elem[3], first[3], outer[3], inner_stride[3];
  int64_t inner, batch;
};

__global__ void grid_pointers_kernel(const void** ptrs, PointerGrid g) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= g.batch) return;
  const int64_t o = i / g.inner, r = i % g.inner;
  for (int k = 0; k < 3; ++k)
    ptrs[k * g.batch + i] =
        g.base[k] + g.elem[k] * (g.first[k] + o * g.outer[k] + r * g.inner_stride[k]);
}

}  // namespace

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(cat("[gemm] ", what, " failed with cuBLAS status ", static_cast<int>(s)));
}

cublasHandle_t cublas_handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t x;
    if (cublasCreate(&x) != CUBLAS_STATUS_SUCCESS) throw DeviceError("[gemm] cublasCreate failed");
    cublas_check(cublasSetStream(x, stream()), "cublasSetStream");  // cuda/stream.h
    constexpr size_t kWorkspace = 32u << 20;
    void* ws = nullptr;
    MASE_CUDA_CHECK(cudaMalloc(&ws, kWorkspace));  // kept for the process's life
    cublas_check(cublasSetWorkspace(x, ws, kWorkspace), "cublasSetWorkspace");
    return x;
  }();
  return h;
}

void* device_scratch(int slot, size_t bytes) {
  constexpr int kSlots = 8;
  static std::mutex mu;
  static std::array<size_t, kSlots> capacity{};
  static std::array<void*, kSlots> current{};
  static std::vector<void*> all;  // every buffer ever made (graphs may hold old ones)
  if (slot < 0 || slot >= kSlots) throw DeviceError(cat("[gemm] no scratch slot ", slot));
  std::lock_guard lock(mu);
  if (bytes > capacity[slot]) {
    const size_t n = std::max(bytes, 2 * capacity[slot]);
    void* p = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;  // see cuda/memory.cu
    MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t err = cudaMalloc(&p, n);
    MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    MASE_CUDA_CHECK(err);
    all.push_back(p);
    current[slot] = p;
    capacity[slot] = n;
  }
  return current[slot];
}

const void** grid_pointers(const void* a, size_t elem_a, const void* b, size_t elem_b, void* c,
                           size_t elem_c, const BatchGrid& g, int64_t batch) {
  auto** ptrs = static_cast<const void**>(
      device_scratch(kScratchPointers, static_cast<size_t>(3 * batch) * sizeof(void*)));
  PointerGrid pg{{static_cast<const char*>(a), static_cast<const char*>(b),
                  static_cast<const char*>(c)},
                 {int64_t(elem_a), int64_t(elem_b), int64_t(elem_c)}, {}, {}, {}, g.inner, batch};
  for (int k = 0; k < 3; ++k) {
    pg.first[k] = g.first[k];
    pg.outer[k] = g.outer_stride[k];
    pg.inner_stride[k] = g.inner_stride[k];
  }
  const int threads = 128;
  grid_pointers_kernel<<<static_cast<int>((batch + threads - 1) / threads), threads, 0,
                         stream()>>>(ptrs, pg);
  MASE_CUDA_CHECK(cudaGetLastError());
  return ptrs;
}

}  // namespace mase::cuda
