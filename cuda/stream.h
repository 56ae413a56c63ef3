// cuda/stream.h — the one CUDA stream every kernel, copy and cuBLAS call of mase-cpp runs on.
// Included by .cu files only.
//
// Why not the default (legacy NULL) stream: a CUDA graph can only capture work issued to a
// stream that is being captured, and the legacy stream cannot be captured at all
// (cudaStreamBeginCapture refuses it). So every launch names this stream:
//
//   my_kernel<<<grid, block, 0, stream()>>>(...);
//   MASE_CUDA_CHECK(cudaGetLastError());     // a bad launch configuration is reported here
//
// It is created non-blocking (no implicit synchronisation with the legacy stream), one per
// device, on first use. Work on it runs in issue order, so kernels need no events between
// them; the host waits only where it must read a result (copy_device_to_host, synchronize).
#pragma once
#include <cuda_runtime.h>

namespace mase::cuda {

// The stream of the current device (cudaGetDevice); created on first use, never destroyed.
cudaStream_t stream();

// Makes `device` current, calling cudaSetDevice only when another device is: with one GPU that
// is never, so copies and fills issued while a CUDA graph is captured make no call beyond
// their own (runtime/kernels/graph_capture.h), and each costs one driver call less.
void use_device(int device);

}  // namespace mase::cuda
