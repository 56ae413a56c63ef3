// runtime/cuda_graph.h — CUDA-graph capture: record the kernels a piece of code launches once,
// then replay all of them with ONE cudaGraphLaunch.
//
// Why: an eager BERT step on a GPU is hundreds of small kernels, each launched by the host
// (a few µs apiece); for small batches the GPU waits on the launches. A captured graph is
// launched as one unit, with the launch gaps gone (graph/compile.h captures a compiled plan).
//
// What a captured region must respect, or the capture breaks (capture() then throws a
// DeviceError with CUDA's reason, leaves nothing behind, and the caller runs uncaptured):
//  * no allocation may reach the driver (cudaMalloc synchronises): every tensor the region
//    makes must come from a planned arena (runtime/allocator.h, Arena::Run), which also gives
//    the SAME addresses at every replay — the graph has the addresses baked in;
//  * no host synchronisation (a .item(), a copy to the host, cudaDeviceSynchronize);
//  * every launch on the calling thread's default stream (mase_cuda is compiled with
//    --default-stream per-thread, cuBLAS set to that stream).
// A replay reads the region's inputs and writes its outputs AT THE CAPTURED ADDRESSES: copy new
// inputs into the captured input tensors first, and copy the outputs out after (graph/compile.cpp
// does both).
// Read next: runtime/kernels/cuda_graph.h (the calls), graph/compile.h ("cuda_graph").
#pragma once
#include <cstddef>
#include <functional>

#include "runtime/device.h"

namespace mase {

class CudaGraph {
 public:
  CudaGraph() = default;  // empty: launch() refuses it
  // Runs f with `device`'s launches on this thread captured instead of executed (f's kernels
  // do NOT run now: launch() runs them). ConfigError for a CPU device; DeviceError when CUDA
  // broke the capture or f threw (rethrown after the capture is dropped).
  static CudaGraph capture(Device device, const std::function<void()>& f);
  ~CudaGraph();
  CudaGraph(CudaGraph&& o) noexcept;
  CudaGraph& operator=(CudaGraph&& o) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void launch() const;  // one cudaGraphLaunch, asynchronous
  bool valid() const { return exec_ != nullptr; }
  size_t nodes() const { return nodes_; }  // kernels and copies captured

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  Device device_;
  size_t nodes_ = 0;
};

// Waits until the work this thread queued on `device` is done (nothing to do on the CPU):
// what a timing of asynchronous launches needs before it reads the clock.
void synchronize(Device device);

}  // namespace mase
