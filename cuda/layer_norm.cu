// cuda/layer_norm.cu — layer norm on the GPU (twin of runtime/cpu/layer_norm.cpp).
//
// forward and dinp: one block per row, block reductions for the row means (block_reduce.cuh).
// dweight/dbias are column sums over all rows, both taken in one pass by
// cuda/column_sums.cuh (chunks of rows over many blocks, then the chunks added per column, in
// a fixed order).
// The fused dropout_add_layer_norm builds hidden = dropout(inp + inp_bias) + residual in the
// same block that normalises the row (the mask from runtime/philox.h, as the CPU draws it,
// stored as one byte an element); its backward is the plain backward on hidden, then
// dinp = dresidual·keep·scale (one thread per element) and dinp_bias = Σ_rows dinp with
// cuda/reduce.cu's column sum.
#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/column_sums.cuh"
#include "cuda/stream.h"
#include "runtime/kernels/layer_norm.h"
#include "runtime/kernels/reduce.h"

namespace mase::cuda {
namespace {

// mean = Σx/C, var = Σ(x − mean)²/C (two passes), y = (x − mean)·rstd·w + b: row blockIdx.x
__device__ void normalize_row(float* out, float* mean, float* rstd, const float* inp,
                              const float* w, const float* b, int64_t cols, float eps) {
  const float* x = inp + blockIdx.x * cols;
  float* y = out + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += x[c];
  const float m = block_sum(s) / float(cols);
  float v = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) v += (x[c] - m) * (x[c] - m);
  const float r = rsqrtf(block_sum(v) / float(cols) + eps);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = r;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] = (x[c] - m) * r * w[c] + b[c];
}

__global__ void forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                               const float* w, const float* b, int64_t cols, float eps) {
  normalize_row(out, mean, rstd, inp, w, b, cols, eps);
}

// hidden = dropout(x + xb) + residual for row blockIdx.x (keep: 1 kept / 0 dropped, when the
// mask is on), then the row is normalised. The row draws row mask.rows(blockIdx.x) of the
// Philox stream: itself, unless graph/passes/narrow_cls.h gave the mask a RowMap (the CPU's
// runtime/cpu/layer_norm.cpp draws the same words)
__global__ void fused_forward_kernel(float* out, float* hidden, uint8_t* keep, float* mean,
                                     float* rstd, const float* inp, const float* xb,
                                     const float* residual, const float* w, const float* b,
                                     int64_t cols, float eps, DropoutMask mask) {
  const int64_t base = blockIdx.x * cols;
  const uint64_t word0 = uint64_t(mask.rows(blockIdx.x)) * uint64_t(cols);  // the row's first word
  const float scale = static_cast<float>(mask.scale);
  const uint64_t offset = mask.on ? dropout_offset(mask) : 0;  // + the captured step's base
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = inp[base + c] + (xb ? xb[c] : 0.f);
    if (mask.on) {
      const bool k = dropout_keep(philox_word(mask.seed, offset, word0 + c), mask.threshold);
      keep[base + c] = k;
      v = k ? v * scale : 0.f;
    }
    hidden[base + c] = v + residual[base + c];
  }
  __syncthreads();  // the row's other elements, written by other threads, are read next
  normalize_row(out, mean, rstd, hidden, w, b, cols, eps);
}

// dinp = dresidual·keep·scale, one thread per element
__global__ void mask_kernel(float* dinp, const float* dres, const uint8_t* keep, float scale,
                            int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dinp[i] = keep[i] ? dres[i] * scale : 0.f;
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w, x̂ = (x − mean)·rstd
__global__ void backward_dx_kernel(float* dinp, const float* dout, const float* inp,
                                   const float* w, const float* mean, const float* rstd,
                                   int64_t cols) {
  const int64_t base = blockIdx.x * cols;
  const float *dy = dout + base, *x = inp + base;
  float* dx = dinp + base;
  const float m = mean[blockIdx.x], s = rstd[blockIdx.x];
  float sg = 0.f, sgx = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = dy[c] * w[c];
    sg += g;
    sgx += g * (x[c] - m) * s;
  }
  const float g_mean = block_sum(sg) / float(cols);
  const float gx_mean = block_sum(sgx) / float(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[c] = s * (dy[c] * w[c] - g_mean - (x[c] - m) * s * gx_mean);
}

// row r's terms of dweight[c] = Σ_rows dy·x̂ and dbias[c] = Σ_rows dy (float sums)
struct DwDbTerms {
  static constexpr int K = 2;
  const float *dout, *inp, *mean, *rstd;
  int64_t cols;
  __device__ void operator()(int64_t, int64_t r, int64_t c, float* s) const {
    const float dy = dout[r * cols + c];
    s[0] += dy * (inp[r * cols + c] - mean[r]) * rstd[r];
    s[1] += dy;
  }
};

}  // namespace

void layer_norm_forward(float* out, float* mean, float* rstd, const float* inp,
                        const float* weight, const float* bias, int64_t rows, int64_t cols,
                        double eps) {
  if (rows == 0 || cols == 0) return;
  forward_kernel<<<row_grid(rows), row_block_threads(cols), 0, stream()>>>(out, mean, rstd, inp, weight, bias,
                                                              cols, static_cast<float>(eps));
  MASE_CUDA_CHECK(cudaGetLastError());
}

void layer_norm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                         const float* inp, const float* weight, const float* mean,
                         const float* rstd, int64_t rows, int64_t cols) {
  if (cols == 0) return;
  if (rows > 0) {
    backward_dx_kernel<<<row_grid(rows), row_block_threads(cols), 0, stream()>>>(dinp, dout, inp, weight, mean,
                                                                    rstd, cols);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  column_sums<float>(dweight, dbias, 1, rows, cols, DwDbTerms{dout, inp, mean, rstd, cols});
}

void dropout_add_layer_norm_forward(float* out, float* hidden, uint8_t* keep, float* mean,
                                    float* rstd, const float* inp, const float* inp_bias,
                                    const float* residual, const float* weight,
                                    const float* bias, int64_t rows, int64_t cols, double eps,
                                    const DropoutMask& mask) {
  if (rows == 0 || cols == 0) return;
  fused_forward_kernel<<<row_grid(rows), row_block_threads(cols), 0, stream()>>>(
      out, hidden, keep, mean, rstd, inp, inp_bias, residual, weight, bias, cols,
      static_cast<float>(eps), mask);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void dropout_add_layer_norm_backward(float* dinp, float* dresidual, float* dinp_bias,
                                     float* dweight, float* dbias, const float* dout,
                                     const float* hidden, const uint8_t* keep, double scale,
                                     const float* weight, const float* mean, const float* rstd,
                                     int64_t rows, int64_t cols) {
  layer_norm_backward(dresidual, dweight, dbias, dout, hidden, weight, mean, rstd, rows, cols);
  const int64_t n = rows * cols;
  if (dinp && n > 0) {
    mask_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(dinp, dresidual, keep, static_cast<float>(scale), n);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  if (dinp_bias) sum_forward(dinp_bias, dinp ? dinp : dresidual, 1, rows, cols);
}

}  // namespace mase::cuda
