// cuda/column_sums.cuh — sums down the columns of a tall matrix, in two launches, in a fixed
// order: the bias gradients (Σ_rows dy), LayerNorm's dweight and dbias.
//
// Why two launches. A column sum of a (rows, cols) matrix has only `cols` outputs: 128 to 768
// for BERT, while rows = B·T = 8,192. One thread per column walking all the rows (the first
// version) keeps 2–6 of an H100's 132 SMs busy, each thread making 8,192 dependent loads: about
// 0.4 ms per bias gradient, the largest share of the backward pass's GEMM and LayerNorm time in
// the first GPU profile (docs/performance.md). So the rows are cut into chunks of kChunkRows:
//   1. column_chunk_kernel: grid (column tiles of 32, chunks, outer); block (32, kRowThreads)
//      (chunks of kChunkRows rows, longer when there would be more than 65,535 of them).
//      Thread (x, y) sums rows y, y + kRowThreads, … of its chunk for column x (a warp reads 32
//      adjacent floats of one row: coalesced), the kRowThreads partial sums are added in y
//      order through shared memory, and the chunk's sum goes to partial[outer][chunk][col].
//   2. column_finish_kernel: one thread per column adds its chunks' sums in chunk order.
// Every output is a fixed sum tree that depends only on the shape (never on the GPU or on
// timing: no atomics), so two runs give the same bits. Scratch: a grow-only device buffer
// (cuda/cublas.h's slot kScratchColumnSums), stream-ordered like every other kernel.
//
// One kernel serves several jobs through a small functor `Terms`: it says how many sums are
// taken at once (K) and adds row r's terms of column c into K accumulators:
//   struct Terms { static constexpr int K = 1;
//                  __device__ void operator()(int64_t o, int64_t r, int64_t c, Acc* s) const; };
#pragma once
#include <cstdint>

#include "cuda/check.h"
#include "cuda/cublas.h"
#include "cuda/stream.h"

namespace mase::cuda {

constexpr int kColumnTile = 32, kRowThreads = 8, kChunkRows = 128;
constexpr int64_t kMaxChunks = 65535;  // a grid's y dimension: longer columns get longer chunks

inline int64_t column_chunk_rows(int64_t rows) {
  const int64_t need = (rows + kMaxChunks - 1) / kMaxChunks;
  return need > kChunkRows ? need : kChunkRows;
}

// partial[((k·outer + o)·chunks + chunk)·cols + c] = Σ_{r in chunk} term_k(o, r, c)
template <class Acc, class Terms>
__global__ void column_chunk_kernel(Acc* partial, int64_t rows, int64_t chunk_rows, int64_t cols,
                                    Terms terms) {
  constexpr int K = Terms::K;
  __shared__ Acc part[K][kRowThreads][kColumnTile];
  const int64_t c = blockIdx.x * int64_t(kColumnTile) + threadIdx.x;
  const int64_t chunk = blockIdx.y, chunks = gridDim.y, o = blockIdx.z, outer = gridDim.z;
  const int64_t r0 = chunk * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  Acc s[K];
  for (int k = 0; k < K; ++k) s[k] = Acc(0);
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowThreads) terms(o, r, c, s);
  for (int k = 0; k < K; ++k) part[k][threadIdx.y][threadIdx.x] = s[k];
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  for (int k = 0; k < K; ++k) {
    Acc t = part[k][0][threadIdx.x];
    for (int y = 1; y < kRowThreads; ++y) t += part[k][y][threadIdx.x];
    partial[((k * outer + o) * chunks + chunk) * cols + c] = t;
  }
}

// out_k[o·cols + c] = Σ_chunk partial[k][o][chunk][c], as float
template <class Acc, int K>
__global__ void column_finish_kernel(float* out0, float* out1, const Acc* partial, int64_t outer,
                                     int64_t chunks, int64_t cols) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= outer * cols) return;
  const int64_t o = j / cols, c = j % cols;
  for (int k = 0; k < K; ++k) {
    const Acc* p = partial + ((k * outer + o) * chunks) * cols + c;
    Acc t = 0;
    for (int64_t q = 0; q < chunks; ++q) t += p[q * cols];
    (k == 0 ? out0 : out1)[j] = static_cast<float>(t);
  }
}

// Runs both launches: out0 (and out1 when Terms::K == 2), each (outer, cols), with
// out_k[o][c] = Σ_{r < rows} term_k(o, r, c). outer ≤ 65,535 (a grid dimension).
template <class Acc, class Terms>
void column_sums(float* out0, float* out1, int64_t outer, int64_t rows, int64_t cols,
                 const Terms& terms) {
  if (outer * cols == 0) return;
  const int64_t chunk_rows = column_chunk_rows(rows);
  const int64_t chunks = rows > 0 ? (rows + chunk_rows - 1) / chunk_rows : 1;
  auto* partial = static_cast<Acc*>(device_scratch(
      kScratchColumnSums, static_cast<size_t>(Terms::K * outer * chunks * cols) * sizeof(Acc)));
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile),
                  static_cast<unsigned>(chunks), static_cast<unsigned>(outer));
  const dim3 block(kColumnTile, kRowThreads);
  column_chunk_kernel<Acc, Terms><<<grid, block, 0, stream()>>>(partial, rows, chunk_rows, cols,
                                                                 terms);
  MASE_CUDA_CHECK(cudaGetLastError());
  const int64_t n = outer * cols;
  column_finish_kernel<Acc, Terms::K><<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                                        stream()>>>(out0, out1, partial, outer, chunks, cols);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
