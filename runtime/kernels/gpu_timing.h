// runtime/kernels/gpu_timing.h — what GPU benchmarks and the step profiler need from the device:
// CUDA events on mase-cpp's stream, an L2 flush, and the GPU's name and sizes.
//
// Why events and not a host clock: a kernel launch returns at once and the GPU runs it later,
// so host time measures the launch, not the kernel. An event recorded on the stream before
// and after the work is stamped by the GPU when it gets there; their difference is the GPU's
// own time for whatever ran between them. Why flush L2 (H100: 50 MB): a kernel timed twice
// in a row finds its inputs in the L2 cache the second time and looks faster than it will be
// inside a training step, where the previous kernel touched other data.
//
// Implemented in cuda/gpu_timing.cu; a build without CUDA gets stubs that throw (backend.h).
// Used by bench/gpu_common.h; no op calls these.
#pragma once
#include <cstddef>
#include <string>

#include "runtime/kernels/backend.h"

namespace mase::cuda {

struct GpuInfo {
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int sm_count = 0;          // streaming multiprocessors
  int cc_major = 0, cc_minor = 0;  // compute capability (9.0 for Hopper)
  size_t l2_bytes = 0;       // L2 cache size
  size_t total_bytes = 0;    // device memory
  int driver_version = 0;    // cudaDriverGetVersion: 13000 = 13.0
  int runtime_version = 0;   // cudaRuntimeGetVersion
};

// An event is an opaque handle (a cudaEvent_t) so that C++ code needs no CUDA header.
MASE_CUDA_FN(void*, event_create, ())
MASE_CUDA_FN(void, event_destroy, (void* event))
// Stamps `event` when the stream (cuda/stream.h) reaches this point.
MASE_CUDA_FN(void, event_record, (void* event))
// Milliseconds between two recorded events; waits until `stop` has happened.
MASE_CUDA_FN(float, event_elapsed_ms, (void* start, void* stop))
// Overwrites a scratch buffer twice the L2's size on the stream, evicting every cached line.
MASE_CUDA_FN(void, flush_l2, ())
MASE_CUDA_FN(GpuInfo, gpu_info, (int device))
// Keeps the GPU busy for about `ms` milliseconds (one thread spinning on the GPU's global
// timer), returning at once on the host: work issued next queues up behind it. The step
// profiler's "hold" (runtime/profiler.h) uses it to measure busy time without host gaps.
MASE_CUDA_FN(void, gpu_hold, (double ms))
// The baseline of memory-bound kernels: cudaMemcpyAsync of n bytes device to device on the
// stream (the driver's copy engine path, as PyTorch's tensor.copy_ of contiguous data).
MASE_CUDA_FN(void, copy_bytes, (void* dst, const void* src, size_t n))
// Free and total device memory now (cudaMemGetInfo), in bytes.
MASE_CUDA_FN(void, memory_info, (size_t* free_bytes, size_t* total_bytes))

}  // namespace mase::cuda
