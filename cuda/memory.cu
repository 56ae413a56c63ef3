// cuda/memory.cu — device memory and host<->device copies (see memory.h).
#include "cuda/check.h"
#include "cuda/memory.h"

namespace mase::cuda {

int device_count() {
  int n = 0;
  // No driver or no GPU is not an error here: it means "0 devices".
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}

void* malloc_device(size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  if (cudaMalloc(&p, nbytes) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;  // the caching allocator empties its cache and retries once
  }
  return p;
}

void free_device(void* ptr, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaFree(ptr));
}

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice));
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost));
}

void copy_device_to_device(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  // async on the thread's stream: ordered with the kernels, and capturable (runtime/cuda_graph.h)
  MASE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, cudaStreamPerThread));
}

void synchronize(int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace mase::cuda
