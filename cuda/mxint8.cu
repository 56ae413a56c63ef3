// cuda/mxint8.cu — MXINT8 quantize / dequantize / fake-quantize on the GPU (twin of
// runtime/cpu/mxint8.cpp). The element arithmetic is quant_elem.h's mx_* functions, the very
// lines the CPU runs, so CPU and GPU give identical bytes (tests/quant/test_mxint8.cpp).
//
// These kernels move bytes and do almost no math, so the whole game is memory access: a
// kernel is as fast as its loads and stores are wide and coalesced. Two paths:
//
// 1. The fast path (K a multiple of 32, pointers 16-byte aligned: every BERT weight and
//    activation). Then the (rows, K) matrix is, in memory, simply a sequence of MX blocks of
//    32 floats, and block b's scale byte is scales[b] — the rows no longer matter. So:
//    * quantize: thread i loads one float4 (elements 4i..4i+3) — a warp reads 512 contiguous
//      bytes in one go. The 8 threads of one MX block find its max |x| with 3 butterfly steps
//      of __shfl_xor_sync (offsets 4, 2, 1 stay inside each aligned group of 8 lanes), each
//      quantizes its 4 elements, packs the 4 int8 into one 32-bit word and stores it (a warp
//      writes 128 contiguous bytes); the group's first thread stores the scale byte.
//    * dequantize: thread i loads 8 int8 (one 64-bit word) and the scale byte of their block
//      (the 4 threads of a block read the same byte: one transaction, served by L1), and
//      stores two float4. Bytes per element: 1 + 1/32 read, 4 written.
//    A grid-stride loop with a grid of a few waves keeps every SM busy with enough loads in
//    flight; mase-bench --suite gpu-quant pairs each kernel with a device-to-device copy of
//    its bytes (the target: >= 85% of the copy bandwidth).
// 2. The general path (any K, e.g. K = 100 = 3·32 + 4, or an unaligned view): a thread block
//    owns a tile of 8 rows × 256 columns; stage 1 loads it coalesced into shared memory
//    (thread t reads column t of each tile row), stage 2 lets warp w quantize tile row w one
//    MX block per step (lane = element, a 5-step butterfly for the max), stage 3 stores it
//    coalesced. Blocks cut by the row end are padded with zeros, which never raise a max.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/quant_elem.h"

namespace mase::cuda {
namespace {

constexpr int kMx = 32;          // elements per MX block
constexpr int kTileRows = 8;     // general path: warps per thread block
constexpr int kTileCols = 256;   // general path: threads per block, thread t owns column t
constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;

__device__ __forceinline__ uint32_t abs_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }

// One element back to f32: the bf16 trick where it applies (a normal scale), else a multiply.
__device__ __forceinline__ float decode(int8_t q, uint32_t s, float step, bool bf16) {
  return (bf16 && s != 0u && s != 0xFFu) ? quant::mx_decode_bf16(q, s) : quant::mx_decode_mul(q, step);
}

// ---- 1. fast path: K % 32 == 0 -------------------------------------------------------------
// kFake: write the dequantized values to out (fake quantization) instead of q and scales.
template <bool kFake>
__global__ void quantize_vec_kernel(int8_t* q, uint8_t* scales, float* out, const float* x,
                                    int64_t n4) {  // n4 = elements / 4, a multiple of 8
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  // `base` is the warp's first float4: the loop condition is the same for the whole warp, so
  // every lane reaches the shuffles (groups of 8 lanes are wholly in or wholly out of range)
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x + threadIdx.x - lane; base < n4; base += stride) {
    const int64_t i = base + lane;
    const bool active = i < n4;
    const float4 v = active ? reinterpret_cast<const float4*>(x)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    uint32_t a = max(max(abs_bits(v.x), abs_bits(v.y)), max(abs_bits(v.z), abs_bits(v.w)));
    for (int off = 4; off > 0; off /= 2) a = max(a, __shfl_xor_sync(0xffffffffu, a, off));
    const uint32_t s = quant::mx_scale(a);  // E8M0: the biased exponent of the block max
    const quant::MxFactors f = quant::mx_factors(s);
    const bool nan_block = s == 0xFFu;      // NaN or inf in the block: q = 0, value NaN
    const int8_t q0 = nan_block ? int8_t(0) : quant::mx_quantize_one(v.x, f);
    const int8_t q1 = nan_block ? int8_t(0) : quant::mx_quantize_one(v.y, f);
    const int8_t q2 = nan_block ? int8_t(0) : quant::mx_quantize_one(v.z, f);
    const int8_t q3 = nan_block ? int8_t(0) : quant::mx_quantize_one(v.w, f);
    if (!active) continue;
    if constexpr (kFake) {
      const float step = quant::mx_step(s);
      reinterpret_cast<float4*>(out)[i] =
          make_float4(quant::mx_decode_mul(q0, step), quant::mx_decode_mul(q1, step),
                      quant::mx_decode_mul(q2, step), quant::mx_decode_mul(q3, step));
    } else {
      const uint32_t packed = uint32_t(uint8_t(q0)) | uint32_t(uint8_t(q1)) << 8 |
                              uint32_t(uint8_t(q2)) << 16 | uint32_t(uint8_t(q3)) << 24;
      reinterpret_cast<uint32_t*>(q)[i] = packed;  // little-endian: q0 is the lowest address
      if ((lane & 7) == 0) scales[i / 8] = static_cast<uint8_t>(s);
    }
  }
}

__global__ void dequantize_vec_kernel(float* out, const int8_t* q, const uint8_t* scales,
                                      int64_t n8, bool bf16) {  // n8 = elements / 8
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n8; i += stride) {
    const uint2 w = reinterpret_cast<const uint2*>(q)[i];  // 8 int8 elements
    const uint32_t s = scales[i / 4];                      // 4 threads per block of 32
    const float step = quant::mx_step(s);
    float r[8];
    for (int k = 0; k < 4; ++k) {
      r[k] = decode(int8_t(w.x >> (8 * k)), s, step, bf16);
      r[k + 4] = decode(int8_t(w.y >> (8 * k)), s, step, bf16);
    }
    float4* o = reinterpret_cast<float4*>(out) + 2 * i;
    o[0] = make_float4(r[0], r[1], r[2], r[3]);
    o[1] = make_float4(r[4], r[5], r[6], r[7]);
  }
}

// ---- 2. general path: any K ----------------------------------------------------------------
// Stage 1: thread t copies column col0 + t of tile rows row0..row0+7 of the (rows, K) matrix
// src into shared memory; outside the matrix it writes 0.
template <class T>
__device__ __forceinline__ void load_tile(T (&tile)[kTileRows][kTileCols], const T* src, int64_t row0,
                                          int64_t col0, int64_t rows, int64_t K) {
  const int t = threadIdx.x;
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t row = row0 + r, col = col0 + t;
    tile[r][t] = (row < rows && col < K) ? src[row * K + col] : T(0);
  }
}

template <bool kFake>
__global__ void quantize_tile_kernel(int8_t* q, uint8_t* scales, float* out, const float* x,
                                     int64_t rows, int64_t K) {
  __shared__ float tile[kTileRows][kTileCols];  // x, then (kFake) the dequantized values
  __shared__ int8_t qtile[kTileRows][kTileCols];
  const int t = threadIdx.x, warp = t / kMx, lane = t % kMx;
  const int64_t col0 = int64_t(blockIdx.x) * kTileCols, nb = (K + kMx - 1) / kMx;
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    const int64_t row0 = rt * kTileRows;
    load_tile(tile, x, row0, col0, rows, K);  // 1. load (coalesced)
    __syncthreads();
    // 2. warp `warp` quantizes tile row `warp`, one MX block per step (lane = element)
    const int64_t row = row0 + warp;
    for (int b = 0; b < kTileCols / kMx; ++b) {
      const float v = tile[warp][b * kMx + lane];
      uint32_t amax = abs_bits(v);
      for (int off = kMx / 2; off > 0; off /= 2) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      const uint32_t s = quant::mx_scale(amax);
      const int8_t qi = s == 0xFFu ? int8_t(0) : quant::mx_quantize_one(v, quant::mx_factors(s));
      qtile[warp][b * kMx + lane] = qi;
      if constexpr (kFake) tile[warp][b * kMx + lane] = quant::mx_decode_mul(qi, quant::mx_step(s));
      const int64_t col = col0 + int64_t(b) * kMx;
      if (!kFake && lane == 0 && row < rows && col < K) scales[row * nb + col / kMx] = uint8_t(s);
    }
    __syncthreads();
    // 3. store (coalesced)
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t row = row0 + r, col = col0 + t;
      if (row >= rows || col >= K) continue;
      if constexpr (kFake) out[row * K + col] = tile[r][t];
      else q[row * K + col] = qtile[r][t];
    }
    __syncthreads();  // the next row tile reuses the shared arrays
  }
}

__global__ void dequantize_tile_kernel(float* out, const int8_t* q, const uint8_t* scales,
                                       int64_t rows, int64_t K, bool bf16) {
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
      const uint32_t s = stile[r][t / kMx];
      if (row < rows && col < K) out[row * K + col] = decode(qtile[r][t], s, quant::mx_step(s), bf16);
    }
    __syncthreads();
  }
}

// ---- launch helpers ------------------------------------------------------------------------
dim3 tile_grid(int64_t rows, int64_t K) {
  const int64_t gx = (K + kTileCols - 1) / kTileCols, gy = (rows + kTileRows - 1) / kTileRows;
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy < kMaxGridY ? gy : kMaxGridY));
}

// A grid-stride loop over `items`: at most 8 waves of 2048 threads per SM (132 SMs on an H100),
// enough to keep loads in flight without launching millions of tiny blocks.
unsigned vec_grid(int64_t items) {
  static const int sms = [] {
    int dev = 0, n = 0;
    MASE_CUDA_CHECK(cudaGetDevice(&dev));
    MASE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const int64_t want = (items + kThreads - 1) / kThreads, cap = int64_t(sms) * 8 * (2048 / kThreads);
  return static_cast<unsigned>(want < cap ? (want > 0 ? want : 1) : cap);
}

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

template <bool kFake>
void quantize_any(int8_t* q, uint8_t* scales, float* out, const float* x, int64_t rows, int64_t K) {
  if (rows == 0 || K == 0) return;
  const bool fast = K % kMx == 0 && aligned(x, 16) && (kFake ? aligned(out, 16) : aligned(q, 4));
  if (fast) {
    const int64_t n4 = rows * K / 4;
    quantize_vec_kernel<kFake><<<vec_grid(n4), kThreads, 0, stream()>>>(q, scales, out, x, n4);
  } else {
    quantize_tile_kernel<kFake><<<tile_grid(rows, K), kThreads, 0, stream()>>>(q, scales, out, x, rows, K);
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void mxint8_quantize(int8_t* q, uint8_t* scales, const float* x, int64_t rows, int64_t K) {
  quantize_any<false>(q, scales, nullptr, x, rows, K);
}

void mxint8_fake_quantize(float* out, const float* x, int64_t rows, int64_t K) {
  quantize_any<true>(nullptr, nullptr, out, x, rows, K);
}

void mxint8_dequantize(float* out, const int8_t* q, const uint8_t* scales, int64_t rows, int64_t K,
                       bool bf16_trick) {
  if (rows == 0 || K == 0) return;
  if (K % kMx == 0 && aligned(q, 8) && aligned(out, 16)) {
    const int64_t n8 = rows * K / 8;
    dequantize_vec_kernel<<<vec_grid(n8), kThreads, 0, stream()>>>(out, q, scales, n8, bf16_trick);
  } else {
    dequantize_tile_kernel<<<tile_grid(rows, K), kThreads, 0, stream()>>>(out, q, scales, rows, K, bf16_trick);
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
