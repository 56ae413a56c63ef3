// cuda/quant_sign.cu — binary, binary_scaling, ternary and residual sign on the GPU (twin of
// runtime/cpu/quant_sign.cpp), forward and backward.
//
// Elementwise formats (binary, residual sign, the clipped STE) are one thread per element
// running quant_elem.h's functions; the stochastic ones draw element i's word from Philox
// block offset + i/4 (runtime/philox.h), as the CPU does, so the same elements flip.
//
// Per-row formats (binary_scaling, ternary) need the row's mean |x| first, and for equal bits
// the sum must be added in the CPU's order: row_sum8 (runtime/cpu/rowwise.h) keeps 8 f64
// accumulators, accumulator j taking elements j, j+8, j+16, ... in order, then adds them in a
// fixed tree ((0+4) (1+5) (2+6) (3+7), then (0+2) (1+3), then (0+1)). A warp per row does
// exactly that: lane j < 8 runs accumulator j, and two __shfl_down_sync steps plus one more
// build the same tree (IEEE addition is commutative, so a + b and b + a are the same bits).
// The row is then written by all 32 lanes, coalesced. Eight lanes summing serially is not the
// fastest reduction, but it is the one that matches, and a BERT row is 768..3072 elements.
//
// Backward sums over every element (dμ, dγ) are f64 partial sums per thread block in a fixed
// grid, then one block adds the partials in order: deterministic run to run, though not the
// CPU's order (the contract says so; tests compare them within rounding).
#include <cmath>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/quant_elem.h"
#include "runtime/kernels/quant_sign.h"

namespace mase::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxLevels = 8;      // binary_residual's levels are 1..8 (quant/format.cpp)
constexpr int kReduceBlocks = 256;  // partial sums per reduction (fixed: determinism)

// The partial sums of the two-stage reductions. One stream runs every kernel in order
// (cuda/stream.h), so two reductions never use it at once.
__device__ double g_partials[kReduceBlocks * kMaxLevels];

unsigned grid_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

#define MASE_GRID_STRIDE(i, n)                                                              \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                \
       i += int64_t(gridDim.x) * blockDim.x)

// ---- elementwise -------------------------------------------------------------------------
__global__ void binary_kernel(float* out, const float* inp, int64_t n, bool bipolar, bool stochastic,
                              uint64_t seed, uint64_t offset) {
  const float neg = bipolar ? -1.f : 0.f;
  MASE_GRID_STRIDE(i, n) {
    out[i] = stochastic ? quant::binary_stochastic_one(inp[i], philox_word(seed, offset, uint64_t(i)), 1.f, neg)
                        : quant::binary_one(inp[i], 1.f, neg);
  }
}

__global__ void residual_kernel(float* out, const float* inp, const float* mu, int levels, int64_t n) {
  float m[kMaxLevels];
  for (int l = 0; l < levels; ++l)  // |μ_l|, or the initial levels as the CPU rounds them
    m[l] = std::abs(mu ? mu[l] : static_cast<float>(quant::residual_level_init(levels, l)));
  MASE_GRID_STRIDE(i, n) {
    const float x = inp[i];
    float r = x, acc = 0.f;
    for (int l = 0; l < levels; ++l) {
      const float term = quant::residual_term(r, m[l]);  // |μ_l|·s_l
      acc += term;
      r -= term;
    }
    out[i] = std::isnan(x) ? x : acc;
  }
}

// dinp = dout·g·[|inp| ≤ 1]; g = |γ| (gamma given) or 1
__global__ void clipped_ste_kernel(float* dinp, const float* dout, const float* inp, const float* gamma,
                                   int64_t n) {
  const float g = gamma ? std::abs(gamma[0]) : 1.f;
  MASE_GRID_STRIDE(i, n) {
    const float d = gamma ? dout[i] * g : dout[i];
    dinp[i] = std::abs(inp[i]) <= 1.f ? d : 0.f;
  }
}

__global__ void binary_gamma_kernel(float* out, const float* inp, const float* gamma, int64_t n) {
  const float g = std::abs(gamma[0]);
  MASE_GRID_STRIDE(i, n) out[i] = quant::binary_one(inp[i], 1.f, -1.f) * g;  // CPU: binary, then *= g
}

// ---- per row: a warp per row ---------------------------------------------------------------
// Σ_j term(j) over a row in row_sum8's order, returned to every lane of the warp.
template <class Term>
__device__ double row_sum8(int64_t cols, int lane, Term term) {
  double acc = 0;
  if (lane < 8)
    for (int64_t j = lane; j < cols; j += 8) acc += term(j);
  for (int w = 4; w > 0; w /= 2) acc += __shfl_down_sync(0xffffffffu, acc, w);  // lane j += j+w
  return __shfl_sync(0xffffffffu, acc, 0);
}

__global__ void binary_scaling_kernel(float* out, const float* inp, int64_t rows, int64_t cols,
                                      bool bipolar, bool stochastic, uint64_t seed, uint64_t offset) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
    const float* x = inp + r * cols;
    float* y = out + r * cols;
    const double s = row_sum8(cols, lane, [&](int64_t j) { return std::abs(double(x[j])); });
    if (!std::isfinite(s)) {  // a NaN or inf in the row: the mean means nothing
      for (int64_t j = lane; j < cols; j += 32) y[j] = NAN;
      continue;
    }
    const float alpha = static_cast<float>(s / double(cols)), neg = bipolar ? -alpha : 0.f;
    for (int64_t j = lane; j < cols; j += 32) {
      const uint64_t i = uint64_t(r * cols + j);  // the flat index picks the Philox word
      y[j] = stochastic ? quant::binary_stochastic_one(x[j], philox_word(seed, offset, i), alpha, neg)
                        : quant::binary_one(x[j], alpha, neg);
    }
  }
}

__global__ void ternary_kernel(float* out, const float* inp, int64_t rows, int64_t cols, bool scaling) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
    const float* x = inp + r * cols;
    float* y = out + r * cols;
    const double total = row_sum8(cols, lane, [&](int64_t j) { return std::abs(double(x[j])); });
    if (!std::isfinite(total)) {
      for (int64_t j = lane; j < cols; j += 32) y[j] = NAN;
      continue;
    }
    const double delta = 0.75 * total / double(cols);
    double alpha = 1;
    if (scaling) {  // mean |x| over the elements above the threshold
      const double s = row_sum8(cols, lane, [&](int64_t j) {
        const double a = std::abs(double(x[j]));
        return a > delta ? a : 0.0;
      });
      int64_t count = 0;  // an integer: any order gives the same count
      for (int64_t j = lane; j < cols; j += 32) count += std::abs(double(x[j])) > delta;
      for (int off = 16; off > 0; off /= 2) count += __shfl_xor_sync(0xffffffffu, count, off);
      alpha = count ? s / double(count) : 0.0;
    }
    const float a = static_cast<float>(alpha);
    for (int64_t j = lane; j < cols; j += 32) y[j] = quant::ternary_one(x[j], delta, a);
  }
}

unsigned row_grid(int64_t rows) {  // a warp per row, 8 rows per block of 256
  const int64_t b = (rows + 7) / 8;
  return static_cast<unsigned>(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

// ---- deterministic sums over all elements: partials per block, then one block ---------------
// Stage 1: block b adds term(i, l) over its grid-stride share into g_partials[b][l], its
// threads' f64 sums combined by a shared-memory tree (fixed order).
template <class Term>
__global__ void partial_sums_kernel(int64_t n, int levels, Term term) {
  __shared__ double sh[kThreads];
  double acc[kMaxLevels] = {};
  MASE_GRID_STRIDE(i, n) term(i, acc);
  for (int l = 0; l < levels; ++l) {
    sh[threadIdx.x] = acc[l];
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) g_partials[blockIdx.x * kMaxLevels + l] = sh[0];
    __syncthreads();
  }
}

// Stage 2: out[l] = float(Σ_b g_partials[b][l]) · sign(v[l]) (d|v|/dv), one thread per level.
__global__ void finish_sums_kernel(float* out, const float* v, int levels, int blocks) {
  const int l = threadIdx.x;
  if (l >= levels) return;
  double s = 0;
  for (int b = 0; b < blocks; ++b) s += g_partials[b * kMaxLevels + l];
  const float sg = v[l] > 0.f ? 1.f : (v[l] < 0.f ? -1.f : 0.f);
  out[l] = static_cast<float>(s) * sg;
}

// Σ dy·s_l per level, s_l the residual signs of x (as the forward builds them).
struct ResidualTerm {
  const float *dout, *inp, *mu;
  int levels;
  __device__ void operator()(int64_t i, double* acc) const {
    float r = inp[i];
    for (int l = 0; l < levels; ++l) {
      const float s = r >= 0.f ? 1.f : -1.f;
      acc[l] += double(dout[i]) * double(s);
      r -= std::abs(mu[l]) * s;  // an exact product: s is ±1
    }
  }
};

// Σ dy·sign(w), sign(0) = +1
struct GammaTerm {
  const float *dout, *inp;
  __device__ void operator()(int64_t i, double* acc) const {
    acc[0] += double(dout[i]) * (inp[i] >= 0.f ? 1.0 : -1.0);
  }
};

template <class Term>
void sum_levels(float* out, const float* v, int levels, int64_t n, Term term) {
  partial_sums_kernel<<<kReduceBlocks, kThreads, 0, stream()>>>(n, levels, term);
  MASE_CUDA_CHECK(cudaGetLastError());
  finish_sums_kernel<<<1, 32, 0, stream()>>>(out, v, levels, kReduceBlocks);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void binary_forward(float* out, const float* inp, int64_t n, bool bipolar, bool stochastic,
                    uint64_t seed, uint64_t offset) {
  if (n == 0) return;
  binary_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, n, bipolar, stochastic, seed, offset);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void binary_scaling_forward(float* out, const float* inp, int64_t rows, int64_t cols, bool bipolar,
                            bool stochastic, uint64_t seed, uint64_t offset) {
  if (rows == 0 || cols == 0) return;
  binary_scaling_kernel<<<row_grid(rows), kThreads, 0, stream()>>>(out, inp, rows, cols, bipolar,
                                                                    stochastic, seed, offset);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void ternary_forward(float* out, const float* inp, int64_t rows, int64_t cols, bool scaling) {
  if (rows == 0 || cols == 0) return;
  ternary_kernel<<<row_grid(rows), kThreads, 0, stream()>>>(out, inp, rows, cols, scaling);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void residual_sign_forward(float* out, const float* inp, const float* mu, int levels, int64_t n) {
  if (n == 0) return;
  MASE_CHECK(levels >= 1 && levels <= kMaxLevels, Error, "[residual_sign] expected 1..", kMaxLevels,
             " levels, got ", levels);
  residual_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, mu, levels, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void residual_sign_backward(float* dinp, float* dmu, const float* dout, const float* inp,
                            const float* mu, int levels, int64_t n) {
  MASE_CHECK(levels >= 1 && levels <= kMaxLevels, Error, "[residual_sign] expected 1..", kMaxLevels,
             " levels, got ", levels);
  if (dinp && n > 0) clipped_ste_backward(dinp, dout, inp, n);
  sum_levels(dmu, mu, levels, n, ResidualTerm{dout, inp, mu, levels});  // n = 0 writes zeros
}

void clipped_ste_backward(float* dinp, const float* dout, const float* inp, int64_t n) {
  if (n == 0) return;
  clipped_ste_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dinp, dout, inp, nullptr, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void binary_gamma_forward(float* out, const float* inp, const float* gamma, int64_t n) {
  if (n == 0) return;
  binary_gamma_kernel<<<grid_for(n), kThreads, 0, stream()>>>(out, inp, gamma, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void binary_gamma_backward(float* dinp, float* dgamma, const float* dout, const float* inp,
                           const float* gamma, int64_t n) {
  if (dinp && n > 0) {
    clipped_ste_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dinp, dout, inp, gamma, n);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  sum_levels(dgamma, gamma, 1, n, GammaTerm{dout, inp});
}

}  // namespace mase::cuda
