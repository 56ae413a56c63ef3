// runtime/kernels/graph_capture.h — CUDA graphs: record the work issued on mase-cpp's stream
// (cuda/stream.h) once, then replay all of it with a single launch.
//
// Why: a BERT training step issues ~1,000 kernels; each launch costs the host a few µs, and
// when the kernels are short (small models, small batches) the GPU waits for the host between
// them. A graph replay is one launch for the whole step, and the GPU runs it back to back.
//
// The contract (what captured work may do): between capture_begin and capture_end nothing
// runs; every kernel, cuBLAS call, device-to-device copy and memset is recorded with its
// arguments as they are *now* — pointers and scalars are frozen into the graph. So the work
// must
//   * not wait for the GPU (no copy to the host, no synchronize, no cudaFree): DeviceError;
//   * not copy from pageable host memory (the host buffer is gone at replay);
//   * find its inputs at fixed device addresses (copy new data into them before each replay)
//     and read anything that changes per replay from device memory (a learning rate, a step
//     count, a random offset), written before the replay;
//   * allocate from a private pool (runtime/allocator.h) so a replay's addresses are the
//     capture's and no other code is handed those blocks meanwhile.
// runtime/cuda_graph.h wraps this with the pool: the class the training step (train/
// graph_step.h) and the compile step (graph/) use.
//
// Implemented in cuda/graph_capture.cu; a build without CUDA gets stubs that throw.
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cuda {

// Starts capturing the current device's stream in cudaStreamCaptureModeThreadLocal: only this
// thread's unsafe calls (a sync, say) break the capture; other threads may use CUDA.
MASE_CUDA_FN(void, capture_begin, ())
// Ends the capture and instantiates the graph: returns an executable graph handle and sets
// *kernels to its kernel nodes (the launches one replay replaces). DeviceError when the
// capture was broken by a forbidden call (the capture is over either way).
MASE_CUDA_FN(void*, capture_end, (int64_t* kernels))
// Ends a capture without keeping it (after an exception inside the captured work).
MASE_CUDA_FN(void, capture_abort, ())
// Launches the whole graph on the stream (returns at once, like a kernel launch).
MASE_CUDA_FN(void, graph_replay, (void* exec))
MASE_CUDA_FN(void, graph_destroy, (void* exec))
// True while this thread is capturing the stream (code that must behave differently under
// capture asks this, e.g. AdamW leaves its per-step upload to the replay).
MASE_CUDA_FN(bool, stream_capturing, ())

}  // namespace mase::cuda
