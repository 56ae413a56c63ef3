// cuda/grad_norm.h — twin of runtime/cpu/grad_norm.h (f32 only): Σ x² in double on the GPU.
//
// To need one device→host copy per clip_grad_norm call rather than one per gradient, the GPU
// version writes partial sums into a caller-provided device buffer: kSumSquaresBlocks doubles
// per tensor, which the caller adds up on the host in index order. The grid size is fixed and
// each block reduces in a fixed tree, so the result is deterministic (no atomics).
#pragma once
#include <cstdint>

#include "cuda/cuda.h"

namespace mase::cuda {

constexpr int kSumSquaresBlocks = 128;

// partials[b] = Σ x[i]² over the elements block b visits (i ≡ b·256 + lane mod grid size).
MASE_CUDA_FN(void, sum_squares_partials, (double* partials, const float* x, int64_t n))

}  // namespace mase::cuda
