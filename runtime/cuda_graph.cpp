// runtime/cuda_graph.cpp — capture with a private pool, replay (see cuda_graph.h).
#include "runtime/cuda_graph.h"

#include <chrono>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/kernels/graph_capture.h"

namespace mase {

CudaGraph::CudaGraph(Device device) : device_(device) {
  MASE_CHECK(device.is_cuda(), DeviceError, "[graph] expected a CUDA device, got ", device);
  require_device(device);
  pool_ = create_pool(device);
}

CudaGraph::~CudaGraph() {
  try {
    if (exec_) cuda::graph_destroy(exec_);
  } catch (...) {  // a dead context at exit: nothing left to free
  }
  release_pool(device_, pool_);
}

void CudaGraph::capture(const std::function<void()>& work) {
  MASE_CHECK(!exec_, Error, "[graph] already captured (one capture per CudaGraph)");
  const auto t0 = std::chrono::steady_clock::now();
  use_pool(device_, pool_);
  try {
    cuda::capture_begin();
  } catch (...) {
    use_pool(device_, 0);
    throw;
  }
  try {
    work();
  } catch (...) {
    cuda::capture_abort();
    use_pool(device_, 0);
    throw;
  }
  try {
    exec_ = cuda::capture_end(&kernels_);
  } catch (...) {
    use_pool(device_, 0);
    throw;
  }
  use_pool(device_, 0);
  capture_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void CudaGraph::replay() {
  MASE_CHECK(exec_, Error, "[graph] replay() before capture()");
  cuda::graph_replay(exec_);
}

}  // namespace mase
