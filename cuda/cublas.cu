// cuda/cublas.cu — the shared cuBLAS handle and grow-only device scratch (see cublas.h).
#include <algorithm>
#include <array>
#include <mutex>
#include <vector>

#include "cuda/check.h"
#include "cuda/cublas.h"
#include "cuda/stream.h"

namespace mase::cuda {

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

}  // namespace mase::cuda
