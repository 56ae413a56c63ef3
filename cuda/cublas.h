// cuda/cublas.h — what the cuBLAS-calling files of cuda/ share (matmul.cu, matmul_bf16.cu): the
// one handle, on the one stream, with a workspace of its own; status checks; and device scratch
// buffers that only grow. Included by .cu files only.
#pragma once
#include <cublas_v2.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/kernels/matmul.h"  // BatchGrid

namespace mase::cuda {

// The process's cuBLAS handle, bound to cuda/stream.h's stream, with a 32 MiB workspace of its
// own (NVIDIA's advice for Hopper) so cuBLAS never allocates inside a call — which a CUDA graph
// capture would not allow.
cublasHandle_t cublas_handle();
// DeviceError "[gemm] <what> failed with cuBLAS status N" unless s is success.
void cublas_check(cublasStatus_t s, const char* what);
inline cublasOperation_t cublas_op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }
// The sizes and leading dimensions of cuBLAS's (non-_64) interface are 32-bit ints: passing an
// int64_t would silently wrap. Throws like the CPU twin's as_int (runtime/cpu/matmul.cpp).
inline int cublas_int(int64_t v) {
  if (v > INT32_MAX || v < 0)
    throw Error(cat("[gemm] size ", v, " exceeds the 32-bit cuBLAS interface"));
  return static_cast<int>(v);
}

// A device buffer of at least `bytes` for scratch slot `slot` (0..7), grown on demand and never
// freed: a captured graph keeps using the address it saw, and stream order makes one buffer per
// use safe to reuse (each GEMM reads it before the next one's preparation overwrites it).
// Growth is allowed while a stream is captured (cudaMalloc in relaxed capture mode).
enum ScratchSlot : int {
  kScratchPointers = 0,
  kScratchBf16A = 1,
  kScratchBf16B = 2,
  kScratchColumnSums = 3,  // cuda/column_sums.cuh: the per-chunk partial sums
};
void* device_scratch(int slot, size_t bytes);

// The pointer arrays of a pointer-batched GEMM (cublas*gemmBatched*), written on the device by a
// small kernel from a two-level grid (runtime/kernels/matmul.h), nothing copied from the host:
// returns ptrs with ptrs[k·batch + i] = base_k + elem_k · (first_k + (i / inner)·outer_k +
// (i % inner)·inner_k) for operands k = a, b, c (elem_k: bytes per element). In the pointer
// scratch slot: valid until the next call.
const void** grid_pointers(const void* a, size_t elem_a, const void* b, size_t elem_b, void* c,
                           size_t elem_c, const BatchGrid& g, int64_t batch);

}  // namespace mase::cuda
