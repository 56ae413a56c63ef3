// cuda/reduce.cu — the (outer, reduce, inner) sum and max on the GPU (twin of
// runtime/cpu/reduce.cpp).
//
// Like the CPU kernel, every output is summed in double in a fixed order, so results do not
// depend on the launch shape or on timing (no atomics):
//  * inner > 1 (column sums, e.g. a bias gradient): cuda/column_sums.cuh — the rows cut into
//    chunks summed by many blocks, then the chunks' sums added per column, both in a fixed
//    order (a grid of more than 65,535 outer slices: one thread per output walks the rows).
//  * inner == 1 (row sums, e.g. the sum of a whole tensor): one block per row, each thread a
//    strided share of the row, then a tree reduction in shared memory.
// Simple rather than fast: a single long row uses one block. A later issue can split it.
#include "cuda/check.h"
#include "cuda/column_sums.cuh"
#include "cuda/stream.h"
#include "runtime/kernels/reduce.h"

namespace mase::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void sum_columns_kernel(float* out, const float* inp, int64_t outer, int64_t reduce,
                                   int64_t inner) {
  int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= outer * inner) return;
  const int64_t o = j / inner, i = j % inner;
  const float* p = inp + o * reduce * inner + i;
  double s = 0;
  for (int64_t r = 0; r < reduce; ++r) s += p[r * inner];
  out[j] = static_cast<float>(s);
}

// term of column sum (o, i), row r: inp[o][r][i], summed in double
struct SumTerms {
  static constexpr int K = 1;
  const float* inp;
  int64_t reduce, inner;
  __device__ void operator()(int64_t o, int64_t r, int64_t i, double* s) const {
    s[0] += inp[(o * reduce + r) * inner + i];
  }
};

__global__ void sum_rows_kernel(float* out, const float* inp, int64_t reduce) {
  __shared__ double part[kThreads];
  const float* row = inp + blockIdx.x * reduce;
  double s = 0;
  for (int64_t r = threadIdx.x; r < reduce; r += kThreads) s += row[r];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {  // part[t] += part[t + w], halving each step
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<float>(part[0]);
}

// One thread per output (o, i) for the max and its backward: simple, coalesced when
// inner > 1; the max skips NaN as the CPU kernel does (fmaxf returns the non-NaN operand).
__global__ void max_kernel(float* out, const float* inp, int64_t outer, int64_t reduce,
                           int64_t inner) {
  int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= outer * inner) return;
  const int64_t o = j / inner, i = j % inner;
  const float* p = inp + o * reduce * inner + i;
  float m = -INFINITY;
  for (int64_t r = 0; r < reduce; ++r) m = fmaxf(m, p[r * inner]);
  out[j] = m;
}

// dinp = dout / (number of ties) where inp equals the max, else 0.
__global__ void max_backward_kernel(float* dinp, const float* dout, const float* inp,
                                    const float* out, int64_t outer, int64_t reduce,
                                    int64_t inner) {
  int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= outer * inner) return;
  const int64_t o = j / inner, i = j % inner, base = o * reduce * inner + i;
  float ties = 0;
  for (int64_t r = 0; r < reduce; ++r) ties += inp[base + r * inner] == out[j] ? 1.f : 0.f;
  const float share = ties > 0 ? dout[j] / ties : 0.f;
  for (int64_t r = 0; r < reduce; ++r)
    dinp[base + r * inner] = inp[base + r * inner] == out[j] ? share : 0.f;
}

}  // namespace

void max_forward(float* out, const float* inp, int64_t outer, int64_t reduce, int64_t inner) {
  if (outer * inner == 0) return;
  max_kernel<<<(outer * inner + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(out, inp, outer, reduce,
                                                                      inner);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void max_backward(float* dinp, const float* dout, const float* inp, const float* out,
                  int64_t outer, int64_t reduce, int64_t inner) {
  if (outer * inner == 0) return;
  max_backward_kernel<<<(outer * inner + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(
      dinp, dout, inp, out, outer, reduce, inner);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void sum_forward(float* out, const float* inp, int64_t outer, int64_t reduce, int64_t inner) {
  if (outer * inner == 0) return;
  if (inner == 1)
    sum_rows_kernel<<<outer, kThreads, 0, stream()>>>(out, inp, reduce);
  else if (outer <= 65535)
    column_sums<double>(out, nullptr, outer, reduce, inner, SumTerms{inp, reduce, inner});
  else
    sum_columns_kernel<<<(outer * inner + kThreads - 1) / kThreads, kThreads, 0, stream()>>>(out, inp, outer,
                                                                              reduce, inner);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
