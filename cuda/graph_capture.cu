// cuda/graph_capture.cu — stream capture into a CUDA graph, and replay (see
// runtime/kernels/graph_capture.h for what captured work may and may not do).
#include <vector>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/graph_capture.h"

namespace mase::cuda {

void capture_begin() {
  MASE_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
}

void* capture_end(int64_t* kernels) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
  if (ended != cudaSuccess || graph == nullptr) {
    cudaGetLastError();  // clear it: the capture is over, the stream usable again
    if (graph) cudaGraphDestroy(graph);
    throw DeviceError(cat("[graph] the capture failed: ", cudaGetErrorString(ended),
                          " (the captured work waited for the GPU, copied from pageable host "
                          "memory, or used another stream: see runtime/kernels/graph_capture.h)"));
  }
  size_t n = 0;
  MASE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) MASE_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  int64_t k = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    MASE_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++k;
  }
  if (kernels) *kernels = k;
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  MASE_CUDA_CHECK(made);
  return exec;
}

void capture_abort() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(), &status) != cudaSuccess) cudaGetLastError();
  if (status == cudaStreamCaptureStatusNone) return;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream(), &graph);  // ends an invalidated capture too
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
}

void graph_replay(void* exec) {
  MASE_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), stream()));
}

void graph_destroy(void* exec) {
  MASE_CUDA_CHECK(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)));
}

bool stream_capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  MASE_CUDA_CHECK(cudaStreamIsCapturing(stream(), &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace mase::cuda
