// cuda/cuda_graph.cu — CUDA-graph capture and launch on the per-thread default stream (the
// contract: runtime/kernels/cuda_graph.h; the user: runtime/cuda_graph.h).
#include "cuda/check.h"
#include "runtime/kernels/cuda_graph.h"

namespace mase::cuda {

void graph_capture_begin(int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  // thread-local: another thread's unsafe call (a cudaMalloc) does not break this capture
  MASE_CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal));
}

void* graph_capture_end(int device, size_t* nodes) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(cudaStreamPerThread, &graph);
  if (ended != cudaSuccess || graph == nullptr) {
    cudaGetLastError();  // clear the sticky error of the broken capture
    if (graph) cudaGraphDestroy(graph);
    throw DeviceError(cat("[cuda_graph] capture failed: ", cudaGetErrorString(ended),
                          " (inside the captured run: an allocation from the driver, a host "
                          "synchronisation, or a launch on another stream)"));
  }
  size_t n = 0;
  cudaGraphGetNodes(graph, nullptr, &n);
  if (nodes) *nodes = n;
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError(cat("[cuda_graph] cudaGraphInstantiate failed: ", cudaGetErrorString(made)));
  }
  return exec;
}

void graph_capture_abort(int device) {
  cudaSetDevice(device);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(cudaStreamPerThread, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(cudaStreamPerThread, &graph);
    if (graph) cudaGraphDestroy(graph);
  }
  cudaGetLastError();
}

void graph_launch(void* exec, int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), cudaStreamPerThread));
}

void graph_destroy(void* exec) {
  if (exec) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}

void stream_synchronize(int device) {
  MASE_CUDA_CHECK(cudaSetDevice(device));
  MASE_CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
}

}  // namespace mase::cuda
