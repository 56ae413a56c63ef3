// cuda/cross_entropy.cu — fused cross-entropy on the GPU (twin of runtime/cpu/cross_entropy.cpp).
//
// Forward: one block per row computes the row's logsumexp and loss; then one block adds the
// N row losses (a fixed order, so the result is deterministic) and divides by count.
// Backward: one thread per logit. dloss stays on the device: no host round trip.
// The count of rows that are not ignored is computed here too (cross_entropy_count), so the
// op never reads the targets on the host.
#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/cross_entropy.h"

namespace mase::cuda {
namespace {

constexpr int kSumThreads = 256;

// lse = m + log Σ exp(x − m); loss = lse − x[target] (0 for an ignored row)
__global__ void row_loss_kernel(float* losses, float* lse, const float* logits,
                                const int32_t* targets, int64_t C, int64_t ignore_index) {
  const int64_t r = blockIdx.x;
  const float* x = logits + r * C;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
  m = block_max(m);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += expf(x[c] - m);
  s = block_sum(s);
  if (threadIdx.x != 0) return;
  const float l = m + logf(s);
  lse[r] = l;
  const int32_t t = targets[r];
  if (t == ignore_index) losses[r] = 0.f;
  else if (t < 0 || t >= C) losses[r] = NAN;  // a bad target: never read out of bounds
  else losses[r] = l - x[t];
}

// count[0] = rows not ignored, −1 if any target is out of range; one block of kSumThreads
__global__ void count_kernel(int32_t* count, const int32_t* targets, int64_t N, int64_t C,
                             int64_t ignore_index) {
  float n = 0.f, bad = 0.f;  // counts as floats: block_sum takes floats (exact below 2^24)
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x) {
    const int32_t t = targets[r];
    if (t == ignore_index) continue;
    if (t < 0 || t >= C) bad += 1.f;
    else n += 1.f;
  }
  n = block_sum(n);
  bad = block_sum(bad);
  if (threadIdx.x == 0) count[0] = bad > 0.f ? -1 : static_cast<int32_t>(n);
}

// loss[0] = Σ losses / count, by one block of kSumThreads threads (NaN for a bad target)
__global__ void mean_kernel(float* loss, const float* losses, int64_t N, const int32_t* count_p) {
  float s = 0.f;
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x) s += losses[r];
  s = block_sum(s);
  const int32_t count = *count_p;
  if (threadIdx.x == 0) loss[0] = count < 0 ? NAN : count == 0 ? 0.f : s / float(count);
}

// dx = (exp(x − lse) − [c == target])·dloss/count, 0 for ignored rows
__global__ void backward_kernel(float* dlogits, const float* dloss, const float* logits,
                                const float* lse, const int32_t* targets, int64_t N, int64_t C,
                                int64_t ignore_index, const int32_t* count_p) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= N * C) return;
  const int64_t r = i / C, c = i % C;
  const int32_t t = targets[r];
  const int32_t count = *count_p;
  if (t == ignore_index || count <= 0) {  // ignored, none counted, or a bad target somewhere
    dlogits[i] = 0.f;
    return;
  }
  const float scale = dloss[0] / float(count);
  dlogits[i] = (expf(logits[i] - lse[r]) - (c == t ? 1.f : 0.f)) * scale;
}

}  // namespace

void cross_entropy_count(int32_t* count, const int32_t* targets, int64_t N, int64_t C,
                         int64_t ignore_index) {
  count_kernel<<<1, kSumThreads, 0, stream()>>>(count, targets, N, C, ignore_index);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void cross_entropy_forward(float* loss, float* losses, float* lse, const float* logits,
                           const int32_t* targets, int64_t N, int64_t C, int64_t ignore_index,
                           const int32_t* count) {
  if (N > 0) {
    row_loss_kernel<<<row_grid(N), row_block_threads(C), 0, stream()>>>(losses, lse, logits, targets, C,
                                                           ignore_index);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  mean_kernel<<<1, kSumThreads, 0, stream()>>>(loss, losses, N, count);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void cross_entropy_backward(float* dlogits, const float* dloss, const float* logits,
                            const float* lse, const int32_t* targets, int64_t N, int64_t C,
                            int64_t ignore_index, const int32_t* count) {
  const int64_t n = N * C;
  if (n == 0) return;
  backward_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(dlogits, dloss, logits, lse, targets, N, C,
                                            ignore_index, count);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
