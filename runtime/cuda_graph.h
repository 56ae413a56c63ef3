// runtime/cuda_graph.h — a captured, replayable piece of GPU work with memory of its own: the
// capture of runtime/kernels/graph_capture.h plus a private pool of the caching allocator
// (runtime/allocator.h). The training step (train/graph_step.h) uses it, and so can the
// compile step (graph/): anything that issues the same GPU work again and again.
//
//   CudaGraph g(Device::cuda());
//   g.capture([&] { work(static_inputs); });  // records the work; nothing runs
//   for (...) {
//     copy_(static_inputs, next_batch);       // new data into the same device buffers
//     g.replay();                             // the whole work, one launch
//   }
//
// Memory: while `work` is captured, every allocation on the device comes from the graph's
// own pool, and every block of that pool, freed or not, stays the pool's — the shared cache
// never hands it to other code. So each replay finds its temporaries at the addresses the
// capture recorded and nothing else has written there. Tensors that outlive the capture
// (the outputs a replay writes, e.g. gradients) keep their pool blocks until freed; the pool
// goes back to the OS with the graph.
//
// What `work` may do is graph_capture.h's contract: no host sync, no pageable copies, and
// whatever changes per replay read from device memory. A broken capture is a DeviceError and
// leaves the graph empty (captured() false), the device usable.
#pragma once
#include <cstdint>
#include <functional>

#include "runtime/device.h"

namespace mase {

class CudaGraph {
 public:
  explicit CudaGraph(Device device);
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Records `work` (see the contract above). Only once per CudaGraph.
  void capture(const std::function<void()>& work);
  // Launches the recorded work on the stream; returns at once. Error unless captured().
  void replay();

  bool captured() const { return exec_ != nullptr; }
  int64_t kernels() const { return kernels_; }   // kernel launches one replay stands for
  double capture_ms() const { return capture_ms_; }  // host time of capture + instantiation

 private:
  Device device_;
  void* exec_ = nullptr;   // cudaGraphExec_t
  uint64_t pool_ = 0;      // runtime/allocator.h's private pool
  int64_t kernels_ = 0;
  double capture_ms_ = 0;
};

}  // namespace mase
