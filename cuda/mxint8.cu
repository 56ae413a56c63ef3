// cuda/mxint8.cu — MXINT8 quantize / dequantize on the GPU (twin of runtime/cpu/mxint8.cpp).
//
// How the work is cut (the part to be able to explain):
//  * A thread block of 256 threads owns one tile of 8 rows × 256 columns of the (rows, K)
//    matrix: 8 MX blocks of 32 per tile row. The grid is (ceil(K/256), tiles of rows), with the
//    row tiles strided so any number of rows fits in gridDim.y.
//  * Stage 1, load: thread t reads column t of each of the 8 tile rows into shared memory.
//    Consecutive threads read consecutive addresses, so each warp's read of a row is one
//    128-byte (floats) or 32-byte (int8) transaction: coalesced, whatever the later use.
//  * Stage 2, compute: with the tile in shared memory, threads can be regrouped freely. For
//    quantize, warp w takes tile row w, and one MX block (32 elements) is exactly one warp:
//    lane i holds element i, the block's max |x| is a 5-step butterfly of __shfl_xor_sync (no
//    shared-memory reduction, no extra barrier), lane 0 writes the scale byte. For
//    dequantize, the 64 scale bytes of the tile are staged once; each is then read from
//    shared memory by the 32 threads of its block (a broadcast) instead of 32 global loads.
//  * Stage 3, store: the results go back to global memory in the same coalesced pattern.
// Shared memory per block: quantize 8·256·(4 + 1) = 10 KiB, dequantize 8·256 + 64 B ≈ 2 KiB,
// so many blocks fit on one SM and hide each other's memory latency.
//
// Arithmetic is the CPU kernel's, step for step (same RNE, same clamp, same E8M0 rule), so
// CPU and GPU give identical bytes (tests/quant/test_mxint8.cpp checks it when a GPU exists).
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/mxint8.h"

namespace mase::cuda {
namespace {

constexpr int kMx = 32;          // elements per MX block = lanes per warp
constexpr int kTileRows = 8;     // = warps per thread block
constexpr int kTileCols = 256;   // = threads per block: thread t owns tile column t in load/store
constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;

// 2^e for e in [−126, 127] (a normal f32: exponent field e + 127, mantissa 0)
__device__ __forceinline__ float pow2f(int e) { return __int_as_float((e + 127) << 23); }

// 2^(s−127)·q/64, by multiply or by the bf16 trick (runtime/kernels/mxint8.h explains it)
__device__ __forceinline__ float decode(int8_t q, uint32_t s, bool bf16) {
  if (s == 0xFFu) return __int_as_float(0x7fc00000);  // NaN block
  if (!bf16 || s == 0u) {
    // 2^(s−133) may be an f32 subnormal (s < 7): build it as 2^(s−127) · 2^−6 in two steps
    const float scale = s == 0u ? pow2f(-126) * 0.5f : pow2f(int(s) - 127);
    return float(q) * scale * 0.015625f;
  }
  const uint32_t sign = q < 0 ? 1u : 0u, a = uint32_t(q < 0 ? -q : q);
  const uint32_t bf = (sign << 15) | (s << 7) | ((a & 63u) << 1);
  const float v = __uint_as_float(bf << 16);
  return (a & 64u) ? v : v - copysignf(pow2f(int(s) - 127), v);
}

// Stage 1 for both kernels: thread t copies column col0 + t of tile rows row0..row0+7 from the
// (rows, K) matrix src into shared memory; outside the matrix it writes 0 (a padding value that
// never raises a block maximum and is never stored back).
template <class T>
__device__ __forceinline__ void load_tile(T (&tile)[kTileRows][kTileCols], const T* src, int64_t row0,
                                          int64_t col0, int64_t rows, int64_t K) {
  const int t = threadIdx.x;
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t row = row0 + r, col = col0 + t;
    tile[r][t] = (row < rows && col < K) ? src[row * K + col] : T(0);
  }
}

__global__ void quantize_kernel(int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K) {
  __shared__ float tile[kTileRows][kTileCols];
  __shared__ int8_t qtile[kTileRows][kTileCols];
  const int t = threadIdx.x, warp = t / kMx, lane = t % kMx;
  const int64_t col0 = int64_t(blockIdx.x) * kTileCols, nb = (K + kMx - 1) / kMx;
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    const int64_t row0 = rt * kTileRows;
    load_tile(tile, x, row0, col0, rows, K);  // 1. load (coalesced)
    __syncthreads();
    // 2. warp `warp` quantizes tile row `warp`, one MX block per iteration (lane = element)
    const int64_t row = row0 + warp;
    for (int b = 0; b < kTileCols / kMx; ++b) {
      const float v = tile[warp][b * kMx + lane];
      uint32_t amax = __float_as_uint(v) & 0x7fffffffu;
      for (int off = kMx / 2; off > 0; off /= 2) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      const uint32_t s = min(amax >> 23, 0xFFu);  // E8M0 = biased exponent of amax (NaN/inf: 0xFF)
      int8_t qi = 0;
      if (s != 0xFFu) {
        const int h = s < 6u ? 6 : 0;  // x·2^(133−s) in two exact steps (2^133 is not an f32)
        const float k = rintf(v * pow2f(133 - int(s) - h) * pow2f(h));  // RNE
        qi = static_cast<int8_t>(fminf(fmaxf(k, -127.f), 127.f));
      }
      qtile[warp][b * kMx + lane] = qi;
      const int64_t col = col0 + int64_t(b) * kMx;
      if (lane == 0 && row < rows && col < K) scales[row * nb + col / kMx] = static_cast<uint8_t>(s);
    }
    __syncthreads();
    // 3. store (coalesced)
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t row = row0 + r, col = col0 + t;
      if (row < rows && col < K) q[row * K + col] = qtile[r][t];
    }
    __syncthreads();  // the next row tile reuses the shared arrays
  }
}

__global__ void dequantize_kernel(float* out, const int8_t* q, const uint8_t* scales, int64_t rows,
                                  int64_t K, bool bf16) {
  __shared__ int8_t qtile[kTileRows][kTileCols];
  __shared__ uint8_t stile[kTileRows][kTileCols / kMx];
  const int t = threadIdx.x;
  const int64_t col0 = int64_t(blockIdx.x) * kTileCols, nb = (K + kMx - 1) / kMx;
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    const int64_t row0 = rt * kTileRows;
    // 1. load the tile's elements (coalesced) and its 8 × 8 scale bytes (threads 0..63)
    load_tile(qtile, q, row0, col0, rows, K);
    if (t < kTileRows * (kTileCols / kMx)) {
      const int r = t / (kTileCols / kMx), b = t % (kTileCols / kMx);
      const int64_t row = row0 + r, blk = col0 / kMx + b;
      stile[r][b] = (row < rows && blk < nb) ? scales[row * nb + blk] : uint8_t(0);
    }
    __syncthreads();
    // 2 + 3. decode from shared memory and store (coalesced: thread t writes column t)
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t row = row0 + r, col = col0 + t;
      if (row < rows && col < K) out[row * K + col] = decode(qtile[r][t], stile[r][t / kMx], bf16);
    }
    __syncthreads();
  }
}

dim3 grid_for(int64_t rows, int64_t K) {
  const int64_t gx = (K + kTileCols - 1) / kTileCols, gy = (rows + kTileRows - 1) / kTileRows;
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy < kMaxGridY ? gy : kMaxGridY));
}

}  // namespace

void mxint8_quantize(int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K) {
  if (rows == 0 || K == 0) return;
  quantize_kernel<<<grid_for(rows, K), kThreads, 0, stream()>>>(q, scales, x, rows, K);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void mxint8_dequantize(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K,
                       bool bf16_trick) {
  if (rows == 0 || K == 0) return;
  dequantize_kernel<<<grid_for(rows, K), kThreads, 0, stream()>>>(out, q, scales, rows, K, bf16_trick);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
