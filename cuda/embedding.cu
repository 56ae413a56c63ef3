// cuda/embedding.cu — row gather / scatter-add on the GPU (twin of runtime/cpu/embedding.cpp).
//
// Forward: one thread per output element. Backward is deterministic like the CPU's: one
// thread per column c walks the N ids in order and adds dout[n, c] into dweight[ids[n], c],
// so no two threads touch one element and there are no atomics (atomicAdd would be faster
// but its float sums depend on the order the adds land in). Adjacent threads own adjacent
// columns, so each step of the walk is a coalesced row read and write. With C = 768 that is
// only 768 threads: fine for BERT's (B·T = 4096) rows, a candidate for a sorted-ids kernel.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/embedding.h"

namespace mase::cuda {
namespace {

__global__ void forward_kernel(float* out, const int32_t* ids, const float* weight, int64_t N,
                               int64_t C) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= N * C) return;
  int64_t n = i / C, c = i % C;
  out[i] = weight[int64_t{ids[n]} * C + c];
}

__global__ void backward_kernel(float* dweight, const float* dout, const int32_t* ids, int64_t N,
                                int64_t C) {
  int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  for (int64_t n = 0; n < N; ++n) dweight[int64_t{ids[n]} * C + c] += dout[n * C + c];
}

}  // namespace

void embedding_forward(float* out, const int32_t* ids, const float* weight, int64_t N, int64_t C) {
  if (N * C == 0) return;
  forward_kernel<<<(N * C + 255) / 256, 256, 0, stream()>>>(out, ids, weight, N, C);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t N,
                        int64_t C) {
  if (N * C == 0) return;
  backward_kernel<<<(C + 127) / 128, 128, 0, stream()>>>(dweight, dout, ids, N, C);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
