// cuda/gpu_timing.cu — CUDA events, L2 flush and device facts (runtime/kernels/gpu_timing.h).
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/gpu_timing.h"

#include "cuda/memory.h"

namespace mase::cuda {
namespace {

__device__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(uint64_t ns) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < ns) __nanosleep(1000);
}

}  // namespace

void gpu_hold(double ms) {
  if (!(ms > 0)) return;
  hold_kernel<<<1, 1, 0, stream()>>>(static_cast<uint64_t>(ms * 1e6));
  MASE_CUDA_CHECK(cudaGetLastError());
}

void* event_create() {
  cudaEvent_t e = nullptr;
  MASE_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void event_destroy(void* event) { MASE_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event))); }

void event_record(void* event) {
  MASE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream()));
}

float event_elapsed_ms(void* start, void* stop) {
  count_host_sync();
  MASE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop)));
  float ms = 0.f;
  MASE_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                       static_cast<cudaEvent_t>(stop)));
  return ms;
}

void flush_l2() {
  static void* scratch = nullptr;
  static size_t bytes = 0;
  if (!scratch) {
    int device = 0, l2 = 0;
    MASE_CUDA_CHECK(cudaGetDevice(&device));
    MASE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    bytes = 2 * static_cast<size_t>(l2 > 0 ? l2 : (64 << 20));
    MASE_CUDA_CHECK(cudaMalloc(&scratch, bytes));  // kept for the process's life
  }
  MASE_CUDA_CHECK(cudaMemsetAsync(scratch, 0, bytes, stream()));
}

GpuInfo gpu_info(int device) {
  cudaDeviceProp p{};
  MASE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  GpuInfo g;
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  g.total_bytes = p.totalGlobalMem;
  MASE_CUDA_CHECK(cudaDriverGetVersion(&g.driver_version));
  MASE_CUDA_CHECK(cudaRuntimeGetVersion(&g.runtime_version));
  return g;
}

void copy_bytes(void* dst, const void* src, size_t n) {
  MASE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream()));
}

void memory_info(size_t* free_bytes, size_t* total_bytes) {
  MASE_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // namespace mase::cuda
