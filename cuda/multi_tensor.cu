// cuda/multi_tensor.cu — multi-tensor kernels: Σ x² per chunk, the clip coefficient, scaling
// and the AdamW update over many tensors per launch (see runtime/kernels/multi_tensor.h).
//
// Each launch takes a Table by value as its kernel argument (under the 4 KB limit): up to
// kMultiTensorMax tensors' pointers and sizes and, per block, which tensor and which chunk of
// kMultiTensorChunk elements it does. Within its chunk a block's threads stride by the block
// size, so loads are coalesced; the kernels are memory-bound like their per-tensor twins
// (cuda/adamw.cu, cuda/grad_norm.cu), which they replace when a whole model is on the GPU.
#include <algorithm>
#include <cmath>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/multi_tensor.h"

namespace mase::cuda {
namespace {

constexpr int kThreads = 256;

template <int P>
struct Table {
  const void* ptr[P][kMultiTensorMax];
  int64_t n[kMultiTensorMax];
  int32_t index[kMultiTensorMax];        // the tensor's index in the caller's list
  uint8_t block_tensor[kMultiTensorBlocks];
  int32_t block_chunk[kMultiTensorBlocks];
  int32_t slot0;                          // global chunk index of block 0
};
static_assert(sizeof(Table<4>) <= 4096, "a kernel's arguments must fit in 4 KB");

// Fills the table of one launch from the callers' pointer lists (P of them).
template <int P>
Table<P> table_for(const MultiTensorLaunch& l, const void* const* const* lists, const int64_t* n) {
  Table<P> t;
  for (size_t j = 0; j < l.tensors.size(); ++j) {
    const int32_t i = l.tensors[j];
    for (int p = 0; p < P; ++p) t.ptr[p][j] = lists[p][i];
    t.n[j] = n[i];
    t.index[j] = i;
  }
  for (size_t b = 0; b < l.block_chunk.size(); ++b) {
    t.block_tensor[b] = l.block_tensor[b];
    t.block_chunk[b] = l.block_chunk[b];
  }
  t.slot0 = l.block_slot.empty() ? 0 : l.block_slot.front();
  return t;
}

// This block's tensor and element range [lo, hi).
template <int P>
__device__ void block_range(const Table<P>& t, int* j, int64_t* lo, int64_t* hi) {
  *j = t.block_tensor[blockIdx.x];
  *lo = int64_t(t.block_chunk[blockIdx.x]) * kMultiTensorChunk;
  *hi = min(t.n[*j], *lo + kMultiTensorChunk);
}

// A fixed tree over the block's threads: deterministic.
__device__ double block_sum(double v) {
  __shared__ double shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  return shared[0];
}

__global__ void sum_squares_kernel(double* partials, Table<1> t) {
  int j;
  int64_t lo, hi;
  block_range(t, &j, &lo, &hi);
  const float* x = static_cast<const float*>(t.ptr[0][j]);
  double acc = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
    const double xi = x[i];
    acc += xi * xi;
  }
  const double s = block_sum(acc);
  if (threadIdx.x == 0) partials[t.slot0 + blockIdx.x] = s;
}

__global__ void clip_finish_kernel(double* state, const double* partials, int64_t count,
                                   double max_norm, const float* loss) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) acc += partials[i];  // fixed order
  const double sum = block_sum(acc);
  if (threadIdx.x != 0) return;
  const double norm = sqrt(sum);
  const bool finite = isfinite(norm);
  double coef = 1.0;
  if (finite && max_norm > 0) coef = fmin(1.0, max_norm / (norm + 1e-6));  // clip_grad_norm.h
  state[kClipNorm] = norm;
  state[kClipCoef] = coef;
  state[kClipFinite] = finite && (loss == nullptr || isfinite(*loss)) ? 1.0 : 0.0;
  state[kClipLoss] = loss ? double(*loss) : nan("");
}

__global__ void scale_kernel(Table<1> t, const double* state) {
  const double coef = state[kClipCoef];
  if (coef >= 1.0) return;  // clamped to 1: nothing to do
  const float c = static_cast<float>(coef);
  int j;
  int64_t lo, hi;
  block_range(t, &j, &lo, &hi);
  float* x = static_cast<float*>(const_cast<void*>(t.ptr[0][j]));  // written: a float* list
  for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads) x[i] *= c;
}

__global__ void adamw_kernel(Table<4> t, const float* __restrict__ slots, AdamWConstants c,
                             const double* state) {
  if (state && state[kClipFinite] == 0.0) return;  // NaN/inf loss or gradient: no update
  int j;
  int64_t lo, hi;
  block_range(t, &j, &lo, &hi);
  float* __restrict__ p = static_cast<float*>(const_cast<void*>(t.ptr[0][j]));
  float* __restrict__ m = static_cast<float*>(const_cast<void*>(t.ptr[1][j]));
  float* __restrict__ v = static_cast<float*>(const_cast<void*>(t.ptr[2][j]));
  const float* __restrict__ g = static_cast<const float*>(t.ptr[3][j]);
  const float* s = slots + int64_t(t.index[j]) * kAdamWSlotScalars;
  const float decay = s[kAdamWDecay], step_size = s[kAdamWStepSize], bc2_sqrt = s[kAdamWBc2Sqrt];
  for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads) {  // as cuda/adamw.cu, line by line
    const float gi = g[i];
    const float mi = m[i] + c.one_minus_beta1 * (gi - m[i]);    // m ← lerp(m, g, 1 − β1)
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * gi * gi;  // v ← β2 v + (1 − β2) g²
    const float denom = sqrtf(vi) / bc2_sqrt + c.eps;           // √v̂ + ε
    p[i] = p[i] * decay - step_size * (mi / denom);             // p(1 − lr·wd) − lr·m̂/(√v̂ + ε)
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void multi_sum_squares(double* partials, const std::vector<const float*>& xs,
                       const std::vector<int64_t>& n, const std::vector<MultiTensorLaunch>& plan) {
  const void* const* lists[1] = {reinterpret_cast<const void* const*>(xs.data())};
  for (const MultiTensorLaunch& l : plan) {
    if (l.block_chunk.empty()) continue;
    const Table<1> t = table_for<1>(l, lists, n.data());
    sum_squares_kernel<<<static_cast<int>(l.block_chunk.size()), kThreads, 0, stream()>>>(partials, t);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

void clip_finish(double* state, const double* partials, int64_t count, double max_norm,
                 const float* loss) {
  clip_finish_kernel<<<1, kThreads, 0, stream()>>>(state, partials, count, max_norm, loss);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void multi_scale(const std::vector<float*>& xs, const std::vector<int64_t>& n,
                 const std::vector<MultiTensorLaunch>& plan, const double* state) {
  const void* const* lists[1] = {reinterpret_cast<const void* const*>(xs.data())};
  for (const MultiTensorLaunch& l : plan) {
    if (l.block_chunk.empty()) continue;
    const Table<1> t = table_for<1>(l, lists, n.data());
    scale_kernel<<<static_cast<int>(l.block_chunk.size()), kThreads, 0, stream()>>>(t, state);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

void multi_adamw(const std::vector<float*>& param, const std::vector<float*>& exp_avg,
                 const std::vector<float*>& exp_avg_sq, const std::vector<const float*>& grad,
                 const std::vector<int64_t>& n, const std::vector<MultiTensorLaunch>& plan,
                 const float* slots, AdamWConstants c, const double* state) {
  const void* const* lists[4] = {reinterpret_cast<const void* const*>(param.data()),
                                 reinterpret_cast<const void* const*>(exp_avg.data()),
                                 reinterpret_cast<const void* const*>(exp_avg_sq.data()),
                                 reinterpret_cast<const void* const*>(grad.data())};
  for (const MultiTensorLaunch& l : plan) {
    if (l.block_chunk.empty()) continue;
    const Table<4> t = table_for<4>(l, lists, n.data());
    adamw_kernel<<<static_cast<int>(l.block_chunk.size()), kThreads, 0, stream()>>>(t, slots, c,
                                                                                     state);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace mase::cuda
