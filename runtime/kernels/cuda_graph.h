// runtime/kernels/cuda_graph.h — the contract of CUDA-graph capture (cuda/cuda_graph.cu), used
// by runtime/cuda_graph.h (read that first: what capture is for and what breaks it).
//
// All of it works on the calling thread's default stream (cudaStreamPerThread): mase_cuda is
// compiled with --default-stream per-thread and cuBLAS is set to that stream (cuda/matmul.cu),
// so every kernel an op launches goes to the stream being captured.
//   graph_capture_begin   cudaStreamBeginCapture(cudaStreamPerThread, thread-local mode): from
//                         here the thread's launches are recorded, not run
//   graph_capture_end     cudaStreamEndCapture + cudaGraphInstantiate: an executable graph
//                         (a cudaGraphExec_t as void*) and its node count; DeviceError with
//                         CUDA's reason when the capture was broken (a cudaMalloc, a host
//                         synchronisation, a launch on another stream inside it)
//   graph_capture_abort   ends a capture left open by an exception, drops it, clears errors
//   graph_launch          one cudaGraphLaunch on the thread's stream (asynchronous)
//   graph_destroy         cudaGraphExecDestroy; never throws
// No CPU twin: a CPU plan has no launches to batch.
#pragma once
#include <cstddef>

#include "runtime/kernels/backend.h"

namespace mase::cuda {

MASE_CUDA_FN(void, graph_capture_begin, (int device))
MASE_CUDA_FN(void*, graph_capture_end, (int device, size_t* nodes))
MASE_CUDA_FN(void, graph_capture_abort, (int device))
MASE_CUDA_FN(void, graph_launch, (void* exec, int device))
MASE_CUDA_FN(void, graph_destroy, (void* exec))
MASE_CUDA_FN(void, stream_synchronize, (int device))

}  // namespace mase::cuda
