// runtime/cuda_graph.cpp — capture and launch (see cuda_graph.h).
#include "runtime/cuda_graph.h"

#include <utility>

#include "runtime/error.h"
#include "runtime/kernels/cuda_graph.h"

namespace mase {

CudaGraph CudaGraph::capture(Device device, const std::function<void()>& f) {
  MASE_CHECK(device.is_cuda(), ConfigError, "[cuda_graph] expected a CUDA device, got ",
             device.str(), " (a CPU plan has no kernel launches to capture)");
  cuda::graph_capture_begin(device.index);
  CudaGraph g;
  g.device_ = device;
  try {
    f();
  } catch (...) {
    cuda::graph_capture_abort(device.index);
    throw;
  }
  g.exec_ = cuda::graph_capture_end(device.index, &g.nodes_);
  return g;
}

CudaGraph::~CudaGraph() {
  if (exec_) {
    try {
      cuda::graph_destroy(exec_);
    } catch (...) {  // a dead context: leak the graph rather than terminate
    }
  }
}

CudaGraph::CudaGraph(CudaGraph&& o) noexcept
    : exec_(std::exchange(o.exec_, nullptr)), device_(o.device_), nodes_(o.nodes_) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  if (this != &o) {
    CudaGraph old(std::move(*this));
    exec_ = std::exchange(o.exec_, nullptr);
    device_ = o.device_;
    nodes_ = o.nodes_;
  }
  return *this;
}

void CudaGraph::launch() const {
  MASE_CHECK(exec_ != nullptr, ConfigError, "[cuda_graph] expected a captured graph, got none");
  cuda::graph_launch(exec_, device_.index);
}

void synchronize(Device device) {
  if (device.is_cuda()) cuda::stream_synchronize(device.index);
}

}  // namespace mase
