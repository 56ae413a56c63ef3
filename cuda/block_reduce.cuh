// cuda/block_reduce.cuh — sum and max over the threads of one block, for the "one block per
// row" kernels (softmax.cu, cross_entropy.cu, layer_norm.cu). Included by .cu files only.
//
// Two levels: a warp reduces its 32 values with register shuffles (__shfl_xor_sync, a
// butterfly, so every lane ends with the result); lane 0 of each warp puts its result in
// shared memory; then every warp reduces those (at most 32) partials the same way. The order
// of operations depends only on blockDim, so results are deterministic run to run.
// Every thread of the block must call these (they contain __syncthreads), with blockDim.x a
// multiple of 32, at most 1024.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "runtime/error.h"

namespace mase::cuda {

constexpr int kWarp = 32;

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class Op>
__device__ inline float warp_reduce(float v, Op op) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The reduction of `v` over the block, returned to every thread.
template <class Op>
__device__ inline float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int nwarps = blockDim.x / kWarp;
  v = warp_reduce(v, op);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < nwarps ? partial[lane] : identity;
  return warp_reduce(v, op);
}

__device__ inline float block_sum(float v) { return block_reduce(v, SumOp{}, 0.f); }
__device__ inline float block_max(float v) { return block_reduce(v, MaxOp{}, -INFINITY); }

// Threads for a one-block-per-row kernel: enough warps to cover `cols`, at most 256.
inline int row_block_threads(int64_t cols) {
  int64_t t = (cols + kWarp - 1) / kWarp * kWarp;
  return static_cast<int>(t < kWarp ? kWarp : (t > 256 ? 256 : t));
}

// Blocks for a one-block-per-row kernel: one per row (grid x is limited to 2³¹ − 1).
inline unsigned row_grid(int64_t rows) {
  MASE_CHECK(rows < (int64_t(1) << 31), ShapeError, "[cuda] expected fewer than 2^31 rows, got ",
             rows);
  return static_cast<unsigned>(rows);
}

}  // namespace mase::cuda
