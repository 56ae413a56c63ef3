// cuda/memory.cu — device memory and host<->device copies (see memory.h).
#include "cuda/check.h"
#include "cuda/memory.h"
#include "cuda/stream.h"

#include <atomic>

namespace mase::cuda {

namespace {
std::atomic<uint64_t> g_host_syncs{0};
}  // namespace

uint64_t host_sync_count() { return g_host_syncs.load(std::memory_order_relaxed); }
void count_host_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }

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
  // cudaMalloc is not a stream operation, so CUDA calls it "potentially unsafe" while a stream
  // is captured and a strict capture mode would fail the capture. A CUDA graph's private pool
  // (runtime/cuda_graph.h) does allocate during capture, for blocks the graph keeps for good:
  // relax this thread's mode for the call, as PyTorch's caching allocator does.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  const cudaError_t err = cudaMalloc(&p, nbytes);
  MASE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));  // the previous mode back
  if (err != cudaSuccess) {
    cudaGetLastError();
    return nullptr;  // the caching allocator empties its cache and retries once
  }
  return p;
}

void free_device(void* ptr, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  count_host_sync();  // cudaFree waits for the device to finish with the block
  MASE_CUDA_CHECK(cudaFree(ptr));
}

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  // from pageable memory: returns once `src` has been staged, so the caller may free it
  MASE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream()));
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream()));
  count_host_sync();
  MASE_CUDA_CHECK(cudaStreamSynchronize(stream()));  // the host reads dst next
}

void copy_device_to_device(void* dst, const void* src, size_t nbytes, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream()));
}

void synchronize(int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  count_host_sync();
  MASE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

}  // namespace mase::cuda
