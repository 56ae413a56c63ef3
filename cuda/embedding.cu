// cuda/embedding.cu — row gather / scatter-add on the GPU (twin of runtime/cpu/embedding.cpp).
//
// Forward: one thread per output element. Backward is deterministic like the CPU's: every
// element dweight[v, c] is owned by one thread, which adds dout[n, c] for the rows n with
// ids[n] = v in increasing n — the CPU's order, so the sums are the same bit for bit — and
// there are no atomics (atomicAdd would be faster but its float sums depend on the order the
// adds land in).
// Parallelism: a thread per column alone is only C threads (128 for bert-tiny) each walking
// all N = B·T rows one after the other: a few SMs busy for milliseconds. So the vocabulary is
// also split into P ranges: block (column tile, range p) owns the ids in range p, walks the
// ids (staged through shared memory, one broadcast read per warp) and adds only its rows.
// Adjacent threads own adjacent columns, so each add is a coalesced row read and write.
// Latency: one thread may own very many rows (token types: every row has id 0), and a walk
// that loads one row, adds it and stores it back is a chain of dependent global accesses
// (~2 ms for 8,192 rows on an H100, the first GPU profile). So the sum of a run of equal ids
// stays in a register (stored when the id changes: the same adds in the same order, so the
// same bits), and the loads of kGroup rows are issued before their adds.
#include <algorithm>
#include <cmath>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/embedding.h"

namespace mase::cuda {
namespace {

__global__ void forward_kernel(float* out, const int32_t* ids, const float* weight, int64_t N,
                               int64_t C, int64_t V) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= N * C) return;
  int64_t n = i / C, c = i % C;
  const int64_t v = ids[n];
  out[i] = v >= 0 && v < V ? weight[v * C + c] : NAN;  // a bad id: NaN, never a wild read
}

constexpr int kColumns = 128;   // threads per block: one column each
constexpr int kIdTile = 1024;   // ids staged in shared memory at a time
constexpr int kGroup = 16;      // rows whose dout loads are issued together

// grid (column tiles, P): block (x, p) owns columns [x·128, x·128 + 128) of rows v in
// [p·V/P, (p+1)·V/P); every thread walks every id in order.
__global__ void backward_kernel(float* dweight, const float* dout, const int32_t* ids, int64_t N,
                                int64_t C, int64_t V) {
  __shared__ int32_t tile[kIdTile];
  const int64_t c = blockIdx.x * int64_t(kColumns) + threadIdx.x;
  const int64_t P = gridDim.y, p = blockIdx.y;
  const int64_t lo = p * V / P, hi = (p + 1) * V / P;
  int64_t cur = -1;  // the id whose running sum `acc` holds (its dweight value plus the adds)
  float acc = 0.f;
  for (int64_t n0 = 0; n0 < N; n0 += kIdTile) {
    const int64_t m = min(int64_t(kIdTile), N - n0);
    __syncthreads();  // the previous tile is no longer read
    for (int64_t i = threadIdx.x; i < m; i += kColumns) tile[i] = ids[n0 + i];
    __syncthreads();
    if (c >= C) continue;
    for (int64_t g = 0; g < m; g += kGroup) {
      // the group's rows of this range first: kGroup independent loads in flight at once
      float d[kGroup];
#pragma unroll
      for (int k = 0; k < kGroup; ++k) {
        const int64_t v = g + k < m ? tile[g + k] : -1;
        d[k] = v >= lo && v < hi ? dout[(n0 + g + k) * C + c] : 0.f;
      }
      // then the adds, in row order, into a register while the id stays the same
#pragma unroll
      for (int k = 0; k < kGroup; ++k) {
        const int64_t v = g + k < m ? tile[g + k] : -1;
        if (v < lo || v >= hi) continue;
        if (v != cur) {
          if (cur >= 0) dweight[cur * C + c] = acc;
          cur = v;
          acc = dweight[v * C + c];
        }
        acc += d[k];
      }
    }
  }
  if (c < C && cur >= 0) dweight[cur * C + c] = acc;
}

}  // namespace

void embedding_forward(float* out, const int32_t* ids, const float* weight, int64_t N, int64_t C,
                       int64_t V) {
  if (N * C == 0) return;
  forward_kernel<<<(N * C + 255) / 256, 256, 0, stream()>>>(out, ids, weight, N, C, V);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t N,
                        int64_t C, int64_t V) {
  if (N * C == 0 || V == 0) return;
  // about 4 blocks per SM of an H100 in all; each range of the vocabulary at least 1 row
  const int64_t tiles = (C + kColumns - 1) / kColumns;
  const int64_t P = std::max<int64_t>(1, std::min<int64_t>(V, (528 + tiles - 1) / tiles));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(P));
  backward_kernel<<<grid, kColumns, 0, stream()>>>(dweight, dout, ids, N, C, V);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
