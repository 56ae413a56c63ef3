// cuda/prune.cu — pruning masks of activations on the GPU (twin of runtime/cpu/prune.cpp).
//
// "Prune the k smallest keys, ties by position" (runtime/kernels/prune.h) in two steps that
// do not depend on the order threads run in, so the masks equal the CPU's bit for bit:
//  1. the k-th smallest key t, by radix select: count keys per bucket of their top bits, find
//     the bucket holding the k-th, repeat on the next bits among the keys of that bucket.
//     Counts are integers, so atomics give the same histogram whatever their order.
//  2. the mask: keys below t are pruned, keys above kept, and of the keys equal to t the first
//     `ties` = k − #(keys < t) in position order are pruned. "The i-th tie in position order"
//     is a prefix sum (an exclusive scan) of the flags key == t.
//
// Per row (scope "local": each token vector) one thread block owns one row: 4 passes of 8 bits
// with a 256-bin histogram in shared memory, then the row in chunks of 256 with a block scan.
// Over a whole tensor (scope "global") the passes are 16 + 16 bits with a 65536-bin histogram
// in the workspace, a single block finds each bucket, and the tie ranks take three kernels:
// count the ties per chunk of 4096 keys, scan those counts, write each chunk's mask. Every
// kernel runs on stream() and reads the threshold from device memory: no host synchronisation.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/prune.h"

namespace mase::cuda {
namespace {

using quant::KeySource;
constexpr int kThreads = 256;
constexpr int kPerThread = quant::kSelectChunk / kThreads;  // 16 keys per thread in a chunk

// The exclusive prefix sum of v over the block's threads (in thread order); *total gets the
// sum of all. Every thread of the block must call it (it holds __syncthreads).
__device__ int block_exclusive_sum(int v, int* total) {
  __shared__ int warp_total[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  int x = v;  // inclusive scan inside the warp
  for (int o = 1; o < 32; o *= 2) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_total[warp] = x;
  __syncthreads();
  int before = 0, all = 0;
  for (int w = 0; w < nwarps; ++w) {
    before += w < warp ? warp_total[w] : 0;
    all += warp_total[w];
  }
  __syncthreads();  // warp_total is rewritten by the next call
  *total = all;
  return before + x - v;
}

// ---- per row --------------------------------------------------------------------------------
__global__ void rows_kernel(uint8_t* keep, KeySource keys, int64_t rows, int64_t cols, int64_t k) {
  __shared__ unsigned int hist[256];
  __shared__ uint32_t s_prefix;
  __shared__ long long s_rank;  // the rank (1-based) of the wanted key among those matching prefix
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * cols;
    uint32_t prefix = 0, mask = 0;
    if (threadIdx.x == 0) s_rank = k;
    for (int pass = 0; pass < 4; ++pass) {  // bits 31..24, 23..16, 15..8, 7..0
      const int shift = 24 - 8 * pass;
      for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
      __syncthreads();
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const uint32_t key = keys.key(base + j);
        if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
      }
      __syncthreads();
      if (threadIdx.x == 0) {  // the bucket holding the wanted rank
        long long c = 0;
        int b = 0;
        for (; b < 255 && c + hist[b] < s_rank; ++b) c += hist[b];
        s_rank -= c;
        s_prefix = prefix | (uint32_t(b) << shift);
      }
      __syncthreads();
      prefix = s_prefix;
      mask |= 255u << shift;
    }
    const uint32_t t = prefix;     // the k-th smallest key of the row
    const long long ties = s_rank;  // keys equal to t to prune: k − #(keys < t)
    long long seen = 0;             // ties met in earlier chunks of the row
    for (int64_t j0 = 0; j0 < cols; j0 += blockDim.x) {
      const int64_t j = j0 + threadIdx.x;
      const uint32_t key = j < cols ? keys.key(base + j) : 0u;
      const bool tie = j < cols && key == t;
      int total;
      const int before = block_exclusive_sum(tie ? 1 : 0, &total);
      if (j < cols) keep[base + j] = key < t ? 0 : (key > t ? 1 : (seen + before < ties ? 0 : 1));
      seen += total;
    }
    __syncthreads();  // s_rank and hist are reused by the block's next row
  }
}

// ---- one sequence (global) ------------------------------------------------------------------
struct SelectState {
  long long below;  // keys in buckets before the top-16-bit bucket `hi`
  long long ties;   // keys equal to t to prune
  uint32_t hi, t;
};

struct Workspace {  // carved out of the caller's buffer (select_smallest_workspace_bytes)
  unsigned long long* hist;  // 65536 bins
  SelectState* state;
  long long* chunk_ties;     // ties per chunk of 4096 keys
  long long* chunk_before;   // their exclusive prefix sum
};

Workspace carve(void* p, int64_t chunks) {
  char* c = static_cast<char*>(p);
  Workspace w;
  w.hist = reinterpret_cast<unsigned long long*>(c);
  w.state = reinterpret_cast<SelectState*>(c + 65536 * 8);
  w.chunk_ties = reinterpret_cast<long long*>(c + 65536 * 8 + 64);
  w.chunk_before = w.chunk_ties + chunks;
  return w;
}

// pass 0: histogram of the top 16 bits; pass 1: of the low 16 bits of keys in bucket hi
__global__ void hist_kernel(unsigned long long* hist, KeySource keys, int pass, const SelectState* st) {
  const uint32_t hi = pass == 1 ? st->hi : 0u;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < keys.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t key = keys.key(i);
    if (pass == 0) atomicAdd(&hist[key >> 16], 1ull);
    else if ((key >> 16) == hi) atomicAdd(&hist[key & 0xFFFFu], 1ull);
  }
}

// One block of 1024 threads, 64 bins each: the bin where the cumulative count reaches `rank`.
__global__ void find_bucket_kernel(const unsigned long long* hist, SelectState* st, long long k, int pass) {
  __shared__ unsigned long long before[1024];
  const int t = threadIdx.x;
  const long long rank = pass == 0 ? k : k - st->below;  // 1-based, within this histogram
  unsigned long long mine = 0;
  for (int b = t * 64; b < t * 64 + 64; ++b) mine += hist[b];
  before[t] = mine;
  __syncthreads();
  if (t == 0) {  // exclusive prefix over the 1024 partial counts
    unsigned long long run = 0;
    for (int i = 0; i < 1024; ++i) {
      const unsigned long long c = before[i];
      before[i] = run;
      run += c;
    }
  }
  __syncthreads();
  const long long b0 = static_cast<long long>(before[t]);
  if (b0 < rank && b0 + static_cast<long long>(mine) >= rank) {  // exactly one thread
    long long c = b0;
    int b = t * 64;
    for (; c + static_cast<long long>(hist[b]) < rank; ++b) c += static_cast<long long>(hist[b]);
    if (pass == 0) {
      st->hi = uint32_t(b);
      st->below = c;
    } else {
      st->t = (st->hi << 16) | uint32_t(b);
      st->ties = rank - c;
    }
  }
}

// Chunk c = keys [c·4096, (c+1)·4096): thread i owns 16 consecutive keys of it.
__global__ void count_ties_kernel(long long* chunk_ties, KeySource keys, const SelectState* st) {
  const uint32_t t = st->t;
  const int64_t j0 = int64_t(blockIdx.x) * quant::kSelectChunk + int64_t(threadIdx.x) * kPerThread;
  int mine = 0;
  for (int e = 0; e < kPerThread; ++e) mine += (j0 + e < keys.n && keys.key(j0 + e) == t) ? 1 : 0;
  int total;
  block_exclusive_sum(mine, &total);
  if (threadIdx.x == 0) chunk_ties[blockIdx.x] = total;
}

// One block of 1024 threads: chunk_before = exclusive prefix sum of chunk_ties.
__global__ void scan_chunks_kernel(long long* chunk_before, const long long* chunk_ties, int64_t chunks) {
  __shared__ long long part[1024];
  const int t = threadIdx.x;
  const int64_t per = (chunks + 1023) / 1024, lo = t * per, hi = lo + per < chunks ? lo + per : chunks;
  long long mine = 0;
  for (int64_t c = lo; c < hi; ++c) mine += chunk_ties[c];
  part[t] = mine;
  __syncthreads();
  if (t == 0) {
    long long run = 0;
    for (int i = 0; i < 1024; ++i) {
      const long long c = part[i];
      part[i] = run;
      run += c;
    }
  }
  __syncthreads();
  long long run = part[t];
  for (int64_t c = lo; c < hi; ++c) {
    chunk_before[c] = run;
    run += chunk_ties[c];
  }
}

__global__ void mask_kernel(uint8_t* keep, KeySource keys, const SelectState* st,
                            const long long* chunk_before) {
  const uint32_t t = st->t;
  const long long ties = st->ties;
  const int64_t j0 = int64_t(blockIdx.x) * quant::kSelectChunk + int64_t(threadIdx.x) * kPerThread;
  uint32_t key[kPerThread];
  int mine = 0;
  for (int e = 0; e < kPerThread; ++e) {
    key[e] = j0 + e < keys.n ? keys.key(j0 + e) : 0u;
    mine += (j0 + e < keys.n && key[e] == t) ? 1 : 0;
  }
  int total;
  long long rank = chunk_before[blockIdx.x] + block_exclusive_sum(mine, &total);  // ties before mine
  for (int e = 0; e < kPerThread && j0 + e < keys.n; ++e) {
    const uint32_t kv = key[e];
    keep[j0 + e] = kv < t ? 0 : (kv > t ? 1 : (rank++ < ties ? 0 : 1));
  }
}

}  // namespace

void select_smallest_rows(uint8_t* keep, const KeySource& keys, int64_t rows, int64_t cols, int64_t k) {
  if (rows == 0 || cols == 0) return;
  if (k <= 0 || k >= cols) {  // nothing or everything pruned
    MASE_CUDA_CHECK(cudaMemsetAsync(keep, k <= 0 ? 1 : 0, size_t(rows * cols), stream()));
    return;
  }
  const unsigned grid = static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
  rows_kernel<<<grid, kThreads, 0, stream()>>>(keep, keys, rows, cols, k);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void select_smallest(uint8_t* keep, const KeySource& keys, int64_t k, void* workspace) {
  const int64_t n = keys.n;
  if (n == 0) return;
  if (k <= 0 || k >= n) {
    MASE_CUDA_CHECK(cudaMemsetAsync(keep, k <= 0 ? 1 : 0, size_t(n), stream()));
    return;
  }
  const int64_t chunks = (n + quant::kSelectChunk - 1) / quant::kSelectChunk;
  const Workspace w = carve(workspace, chunks);
  const int64_t gb = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(gb < 4096 ? gb : 4096);
  for (int pass = 0; pass < 2; ++pass) {  // top 16 bits, then the low 16 within bucket hi
    MASE_CUDA_CHECK(cudaMemsetAsync(w.hist, 0, 65536 * 8, stream()));
    hist_kernel<<<grid, kThreads, 0, stream()>>>(w.hist, keys, pass, w.state);
    MASE_CUDA_CHECK(cudaGetLastError());
    find_bucket_kernel<<<1, 1024, 0, stream()>>>(w.hist, w.state, k, pass);
    MASE_CUDA_CHECK(cudaGetLastError());
  }
  count_ties_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream()>>>(w.chunk_ties, keys, w.state);
  MASE_CUDA_CHECK(cudaGetLastError());
  scan_chunks_kernel<<<1, 1024, 0, stream()>>>(w.chunk_before, w.chunk_ties, chunks);
  MASE_CUDA_CHECK(cudaGetLastError());
  mask_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream()>>>(keep, keys, w.state, w.chunk_before);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
