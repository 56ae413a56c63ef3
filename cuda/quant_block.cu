// cuda/quant_block.cu — the block formats on the GPU (twin of runtime/cpu/quant_block.cpp):
// block_fp, block_minifloat, block_log, mxint8 and mxfp*, fake quantization.
//
// Both kernels run the CPU's arithmetic (runtime/kernels/quant_elem.h): block_plan from the
// block's max |x|, then block_one per element — block_quantize is those two in a loop — so the
// bits are the CPU's by construction.
//
//  * group_kernel, for a block_size that is a power of two up to 32 (every format's usual
//    size: 16, 32): a group of block_size neighbouring lanes of a warp takes one block, lane i
//    element i. A warp's 32 loads (and stores) are then 128 contiguous bytes, one transaction,
//    and each element is read once. The group finds the block's max |x|, and whether every
//    element is finite, with __shfl_xor_sync over log2(block_size) steps: lanes i and i ^ off
//    are in the same group because groups start at multiples of block_size. A max is exact and
//    does not depend on the order it is taken in, so every lane holds the CPU loop's value.
//  * thread_kernel, any other block size: one thread per block walks it (max |x|, then each
//    element), the CPU's loop itself.
//
// The first version had only thread_kernel, and measured on an H100 at 0.13–0.24 of the
// device-to-device copy: one lane per block made a warp's loads 32 different sectors, 4 bytes
// used of each (docs/performance.md, "Why the block formats run at 0.13–0.24 of the copy").
// MXINT8 also has the packed fast path (cuda/mxint8.cu), which quant/quantize.cpp uses.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/quant_block.h"
#include "runtime/kernels/quant_elem.h"

namespace mase::cuda {
namespace {

constexpr int kBlockThreads = 256;  // a multiple of 32: the grid-stride loop moves whole warps

// (rows, cols) row-major; block g of the row-major list of blocks is columns
// [(g % per_row)·G, +G) of row g / per_row (the last one of a row may be short: its lanes past
// the row's end hold 0 and store nothing).
__global__ void group_kernel(float* out, const float* inp, int64_t rows, int64_t cols,
                             quant::FormatParams f) {
  const int G = f.block_size;
  const int64_t per_row = (cols + G - 1) / G, lanes = rows * per_row * G;
  const int64_t padded = (lanes + 31) / 32 * 32;  // every lane of a warp shuffles, or none
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < padded; t += stride) {
    const int64_t g = t / G, r = g / per_row, c = (g % per_row) * G + t % G;
    const bool here = t < lanes && c < cols;
    const float x = here ? inp[r * cols + c] : 0.f;
    float amax = here ? fabsf(x) : 0.f;
    float bad = here && !std::isfinite(x) ? 1.f : 0.f;  // a NaN or inf anywhere: the block is NaN
    for (int off = G / 2; off > 0; off /= 2) {
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));  // (NaN: `bad` has it)
      bad = fmaxf(bad, __shfl_xor_sync(0xffffffffu, bad, off));
    }
    quant::BlockStats s;
    s.amax = double(amax);  // the f64 max of the CPU's loop: the same float, widened
    s.finite = bad == 0.f;
    if (here) out[r * cols + c] = quant::block_one(x, quant::block_plan(s, f));
  }
}

__global__ void thread_kernel(float* out, const float* inp, int64_t rows, int64_t cols,
                              quant::FormatParams f) {
  const int64_t bs = f.block_size, per_row = (cols + bs - 1) / bs, total = rows * per_row;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const int64_t r = t / per_row, j = (t % per_row) * bs;
    const int64_t n = cols - j < bs ? cols - j : bs;  // the last block of a row may be shorter
    quant::block_quantize(out + r * cols + j, inp + r * cols + j, n, f);
  }
}

// blocks of kBlockThreads threads for `work` threads' worth, at most 65,536 (grid-stride loops)
unsigned grid_blocks(int64_t work) {
  const int64_t b = (work + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(b < 65536 ? b : 65536);
}

// a power of two up to 32: a group of lanes per block
bool block_grouped(int block_size) {
  return block_size >= 1 && block_size <= 32 && (block_size & (block_size - 1)) == 0;
}

}  // namespace

void block_forward(float* out, const float* inp, int64_t rows, int64_t cols,
                   const quant::FormatParams& f) {
  if (rows == 0 || cols == 0) return;
  const int64_t bs = f.block_size, per_row = (cols + bs - 1) / bs;
  if (block_grouped(f.block_size)) {
    const dim3 grid(grid_blocks(rows * per_row * bs));
    group_kernel<<<grid, kBlockThreads, 0, stream()>>>(out, inp, rows, cols, f);
  } else {
    const dim3 grid(grid_blocks(rows * per_row));
    thread_kernel<<<grid, kBlockThreads, 0, stream()>>>(out, inp, rows, cols, f);
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
