// cuda/softmax_rows.cuh — the row-softmax kernels of cuda/softmax.cu and their launchers, in a
// header so that the kernel ladder (cuda/softmax_ladder.cu) times the very same kernels.
// Included by .cu files only. Read cuda/softmax.cu first (which kernel runs when, and why).
//
// Two shapes of kernel, both reading each input element from global memory ONCE (when the row
// fits in registers or shared memory) and writing each output element once — the least
// traffic any softmax can have (2 × 4 bytes an element):
//
//   warp_row_*    one warp per row, the row held in registers: lane l owns the vectors
//                 l, l + 32, l + 64, … of the row (kIters of them, kVec floats each: float4
//                 loads when the row is 16-byte aligned). Max and sum are warp shuffles; no
//                 shared memory, no __syncthreads. For rows up to 1024 floats (BERT's T ≤ 512).
//   block_row_*   one block per row, for long rows. When the row fits in shared memory
//                 (kCache) each thread copies its vectors there as it reads them, taking the
//                 max; the sum of exps and the output are then computed from that copy (each
//                 thread re-reads only what it wrote itself, so no barrier is needed between).
//                 Rows too long to cache are read twice: the first sweep keeps a running
//                 (max, sum) — the online softmax of Milakov & Gimelshein 2018:
//                   m' = max(m, x)    s' = s·exp(m − m') + exp(x − m')
//                 — merged over the block, and the second sweep reads x again to write y.
//
// Fully masked rows (every entry −inf): the max is −inf, and the kernels write softmax 0 and
// log_softmax −inf without computing −inf − (−inf) = NaN; the backward formulas give 0 and dy
// there with no special case (see autograd/ops/softmax.cpp).
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/stream.h"

namespace mase::cuda::softmax_rows {

constexpr int kRowsPerBlock = 4;                  // warp_row_*: 4 warps, 4 rows per block
constexpr int kWarpRowThreads = kRowsPerBlock * kWarp;
constexpr int64_t kMaxWarpCols = 1024;            // 32 lanes × 32 registers
// Dynamic shared memory a launch may ask for without opting in is 48 KB *including* the
// kernel's static shared memory (the block reductions' few hundred bytes): asking for the whole
// 48 KB made the 12,288-float rows' launch fail with "invalid argument" on an H100. 1 KB is kept.
constexpr int64_t kCacheBytes = 47 * 1024;

// ---- small device helpers -------------------------------------------------------------------

// kVec consecutive floats from p (16-byte aligned when kVec == 4) into v, and back.
template <int kVec>
__device__ inline void load_vec(float* v, const float* p) {
  if constexpr (kVec == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = p[i];
  }
}
template <int kVec>
__device__ inline void store_vec(float* p, const float* v) {
  if constexpr (kVec == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) p[i] = v[i];
  }
}

// The running (max m, sum s = Σ exp(x − m)) of a row, one element x more.
__device__ inline void online_add(float& m, float& s, float x) {
  if (x > m) {             // a new max: rescale what was summed against the old one
    s = s * expf(m - x) + 1.f;  // m = −inf (nothing yet): exp(−inf) = 0, s = 1
    m = x;
  } else if (x != -INFINITY) {  // −inf adds exp(−inf) = 0; skipping it avoids −inf − (−inf)
    s += expf(x - m);
  }
}

// Two running pairs merged: m = max, each sum rescaled to it. Symmetric, so both lanes of a
// shuffle butterfly end with bit-identical results.
__device__ inline void online_merge(float& m, float& s, float m2, float s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;  // both empty: (−inf, 0)
  s = s * expf(m - mm) + s2 * expf(m2 - mm);
  m = mm;
}

__device__ inline void warp_online(float& m, float& s) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
    online_merge(m, s, m2, s2);
  }
}

// (m, s) merged over the block, returned to every thread (the block_reduce pattern).
__device__ inline void block_online(float& m, float& s) {
  __shared__ float pm[kWarp], ps[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int nwarps = blockDim.x / kWarp;
  warp_online(m, s);
  __syncthreads();  // a previous call may still be reading pm, ps
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? pm[lane] : -INFINITY;
  s = lane < nwarps ? ps[lane] : 0.f;
  warp_online(m, s);
}

// ---- one warp per row, the row in registers ---------------------------------------------------

// kLog = false: y = exp(x − m) / Σ exp(x − m);  kLog = true: y = (x − m) − log Σ exp(x − m).
// Lane l holds vectors k·32 + l (k < kIters) of kVec floats; cols ≤ 32·kIters·kVec and, when
// kVec = 4, cols % 4 == 0 (a vector is then wholly inside the row or wholly past its end).
template <bool kLog, int kVec, int kIters>
__global__ void __launch_bounds__(kWarpRowThreads)
    warp_row_forward(float* out, const float* inp, int64_t rows, int cols) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp leaves together; there is no barrier below
  const int lane = threadIdx.x % kWarp;
  const float* x = inp + row * cols;
  float* y = out + row * cols;
  float v[kIters][kVec];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int c = (k * kWarp + lane) * kVec;
    if (c < cols) {
      load_vec<kVec>(v[k], x + c);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[k][i] = -INFINITY;  // past the end: weight 0
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) m = fmaxf(m, v[k][i]);
  }
  m = warp_reduce(m, MaxOp{});
  if (m == -INFINITY) {  // fully masked row (the whole warp sees the same m)
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int c = (k * kWarp + lane) * kVec;
      float z[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) z[i] = kLog ? -INFINITY : 0.f;
      if (c < cols) store_vec<kVec>(y + c, z);
    }
    return;
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kIters; ++k)
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const float e = expf(v[k][i] - m);  // past the end: exp(−inf) = 0
      if (!kLog) v[k][i] = e;
      s += e;
    }
  s = warp_reduce(s, SumOp{});
  const float inv = 1.f / s, log_s = logf(s);
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int c = (k * kWarp + lane) * kVec;
    if (c >= cols) continue;
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[k][i] = kLog ? (v[k][i] - m) - log_s : v[k][i] * inv;
    store_vec<kVec>(y + c, v[k]);
  }
}

// softmax: dx = y·(dy − Σ dy·y);  log_softmax: dx = dy − exp(y)·Σ dy. Same layout as above.
template <bool kLog, int kVec, int kIters>
__global__ void __launch_bounds__(kWarpRowThreads)
    warp_row_backward(float* dinp, const float* dout, const float* out, int64_t rows, int cols) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t base = row * cols;
  float dy[kIters][kVec], y[kIters][kVec];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int c = (k * kWarp + lane) * kVec;
    if (c < cols) {
      load_vec<kVec>(dy[k], dout + base + c);
      load_vec<kVec>(y[k], out + base + c);
#pragma unroll
      for (int i = 0; i < kVec; ++i) s += kLog ? dy[k][i] : dy[k][i] * y[k][i];
    }
  }
  s = warp_reduce(s, SumOp{});
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int c = (k * kWarp + lane) * kVec;
    if (c >= cols) continue;
    float dx[kVec];
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      dx[i] = kLog ? dy[k][i] - expf(y[k][i]) * s : y[k][i] * (dy[k][i] - s);
    store_vec<kVec>(dinp + base + c, dx);
  }
}

// ---- one block per row, online (max, sum), the row cached in shared memory if it fits ---------

// Row blockIdx.x; thread t owns vectors t, t + blockDim.x, … of kVec floats (cols % kVec == 0).
// kCache: dynamic shared memory holds the row (cols floats).
template <bool kLog, bool kCache, int kVec>
__global__ void block_row_forward(float* out, const float* inp, int cols) {
  extern __shared__ float4 cache4[];
  float* cache = reinterpret_cast<float*>(cache4);
  const float* x = inp + int64_t(blockIdx.x) * cols;
  float* y = out + int64_t(blockIdx.x) * cols;
  const int nvec = cols / kVec;
  float m = -INFINITY, s = 0.f;
  if constexpr (kCache) {
    // sweep 1, the only read of x: copy it to shared memory and take the max (no exp here,
    // so nothing holds back the next loads); then Σ exp(x − m) from the copy
#pragma unroll 4
    for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
      float v[kVec];
      load_vec<kVec>(v, x + u * kVec);
      store_vec<kVec>(cache + u * kVec, v);
#pragma unroll
      for (int i = 0; i < kVec; ++i) m = fmaxf(m, v[i]);
    }
    m = block_max(m);  // contains barriers: every thread reaches it
    if (m != -INFINITY) {
      for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
        float v[kVec];
        load_vec<kVec>(v, cache + u * kVec);  // what this thread itself wrote: no barrier needed
#pragma unroll
        for (int i = 0; i < kVec; ++i) s += expf(v[i] - m);
      }
    }
    s = block_sum(s);
  } else {
    // sweep 1 of 2 reads: the running (max, sum), merged over the block
    for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
      float v[kVec];
      load_vec<kVec>(v, x + u * kVec);
#pragma unroll
      for (int i = 0; i < kVec; ++i) online_add(m, s, v[i]);
    }
    block_online(m, s);  // contains barriers: every thread reaches it
  }
  if (m == -INFINITY) {  // fully masked row (block-uniform)
    for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
      float z[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) z[i] = kLog ? -INFINITY : 0.f;
      store_vec<kVec>(y + u * kVec, z);
    }
    return;
  }
  const float inv = 1.f / s, log_s = logf(s);
  for (int u = threadIdx.x; u < nvec; u += blockDim.x) {  // sweep 2: write
    float v[kVec];
    load_vec<kVec>(v, (kCache ? cache : x) + u * kVec);  // the cache: what this thread wrote
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = kLog ? (v[i] - m) - log_s : expf(v[i] - m) * inv;
    store_vec<kVec>(y + u * kVec, v);
  }
}

// kCache: shared memory holds dy then y, each padded to a multiple of 4 floats.
template <bool kLog, bool kCache, int kVec>
__global__ void block_row_backward(float* dinp, const float* dout, const float* out, int cols) {
  extern __shared__ float4 cache4[];
  float* cdy = reinterpret_cast<float*>(cache4);
  float* cy = cdy + (cols + 3) / 4 * 4;
  const int64_t base = int64_t(blockIdx.x) * cols;
  const int nvec = cols / kVec;
  float s = 0.f;
  for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
    float dy[kVec], y[kVec];
    load_vec<kVec>(dy, dout + base + u * kVec);
    load_vec<kVec>(y, out + base + u * kVec);
    if constexpr (kCache) {
      store_vec<kVec>(cdy + u * kVec, dy);
      store_vec<kVec>(cy + u * kVec, y);
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) s += kLog ? dy[i] : dy[i] * y[i];
  }
  s = block_sum(s);
  for (int u = threadIdx.x; u < nvec; u += blockDim.x) {
    float dy[kVec], y[kVec], dx[kVec];
    load_vec<kVec>(dy, (kCache ? cdy : dout + base) + u * kVec);
    load_vec<kVec>(y, (kCache ? cy : out + base) + u * kVec);
#pragma unroll
    for (int i = 0; i < kVec; ++i) dx[i] = kLog ? dy[i] - expf(y[i]) * s : y[i] * (dy[i] - s);
    store_vec<kVec>(dinp + base + u * kVec, dx);
  }
}

// ---- launchers (host) ---------------------------------------------------------------------------

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline unsigned warp_row_grid(int64_t rows) {
  return row_grid((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

// Threads of a block_row kernel: a quarter as many as the row has vectors (each thread then
// has ~4 loads in flight), a multiple of 32 in [128, 1024].
inline int block_row_threads(int64_t nvec) {
  int64_t t = (nvec / 4 + kWarp - 1) / kWarp * kWarp;
  return static_cast<int>(t < 128 ? 128 : (t > 1024 ? 1024 : t));
}

// The smallest register budget that holds `cols`: kIters = 1, 2, 4, … vectors per lane, up to
// kMaxWarpCols (the recursion stops there at compile time, so no larger kernel is built).
template <bool kLog, int kVec, int kIters = 1>
void launch_warp_forward(float* out, const float* inp, int64_t rows, int cols) {
  if constexpr (int64_t(kIters) * kWarp * kVec < kMaxWarpCols) {
    if (cols > kIters * kWarp * kVec)
      return launch_warp_forward<kLog, kVec, 2 * kIters>(out, inp, rows, cols);
  }
  warp_row_forward<kLog, kVec, kIters>
      <<<warp_row_grid(rows), kWarpRowThreads, 0, stream()>>>(out, inp, rows, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

template <bool kLog, int kVec, int kIters = 1>
void launch_warp_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                          int cols) {
  if constexpr (int64_t(kIters) * kWarp * kVec < kMaxWarpCols) {
    if (cols > kIters * kWarp * kVec)
      return launch_warp_backward<kLog, kVec, 2 * kIters>(dinp, dout, out, rows, cols);
  }
  warp_row_backward<kLog, kVec, kIters>
      <<<warp_row_grid(rows), kWarpRowThreads, 0, stream()>>>(dinp, dout, out, rows, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

// cache: whether to keep the row in shared memory (the caller checks it fits in kCacheBytes).
template <bool kLog, int kVec>
void launch_block_forward(float* out, const float* inp, int64_t rows, int cols, bool cache) {
  const int threads = block_row_threads(cols / kVec);
  const size_t smem = cache ? size_t(cols) * sizeof(float) : 0;
  const unsigned grid = row_grid(rows);
  if (cache)
    block_row_forward<kLog, true, kVec><<<grid, threads, smem, stream()>>>(out, inp, cols);
  else
    block_row_forward<kLog, false, kVec><<<grid, threads, 0, stream()>>>(out, inp, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

template <bool kLog, int kVec>
void launch_block_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                           int cols, bool cache) {
  const int threads = block_row_threads(cols / kVec);
  const size_t smem = cache ? 2 * size_t((cols + 3) / 4 * 4) * sizeof(float) : 0;
  const unsigned grid = row_grid(rows);
  if (cache)
    block_row_backward<kLog, true, kVec><<<grid, threads, smem, stream()>>>(dinp, dout, out, cols);
  else
    block_row_backward<kLog, false, kVec><<<grid, threads, 0, stream()>>>(dinp, dout, out, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

// Bytes of shared memory the block kernels need to cache a row (forward: x; backward: dy, y).
inline int64_t forward_cache_bytes(int64_t cols) { return cols * 4; }
inline int64_t backward_cache_bytes(int64_t cols) { return 2 * ((cols + 3) / 4 * 4) * 4; }

}  // namespace mase::cuda::softmax_rows
