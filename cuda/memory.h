// cuda/memory.h — device memory and copies between host and device (twin of std::memcpy).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cuda {

// Number of usable GPUs; 0 when CUDA is not built, no driver is loaded or no GPU is present.
// Never throws: tests call it to decide whether to skip.
#ifdef MASE_HAS_CUDA
int device_count();
#else
inline int device_count() { return 0; }
#endif

// How many times the host has waited for the GPU so far: copy_device_to_host, synchronize,
// event waits (runtime/kernels/gpu_timing.h) and cudaFree (which waits for the device). The
// step profiler (runtime/profiler.h) reports the difference across a step. 0 without CUDA.
#ifdef MASE_HAS_CUDA
uint64_t host_sync_count();
void count_host_sync();
#else
inline uint64_t host_sync_count() { return 0; }
#endif

MASE_CUDA_FN(void*, malloc_device, (size_t nbytes, int device))
MASE_CUDA_FN(void, free_device, (void* ptr, int device))
MASE_CUDA_FN(void, copy_host_to_device, (void* dst, const void* src, size_t nbytes, int device))
MASE_CUDA_FN(void, copy_device_to_host, (void* dst, const void* src, size_t nbytes, int device))
MASE_CUDA_FN(void, copy_device_to_device, (void* dst, const void* src, size_t nbytes, int device))
MASE_CUDA_FN(void, synchronize, (int device))

}  // namespace mase::cuda
