// cuda/quant_block.cu — the block formats on the GPU (twin of runtime/cpu/quant_block.cpp):
// block_fp, block_minifloat, block_log, mxint8 and mxfp*, fake quantization.
//
// One GPU thread per block of the format: thread t takes block t % blocks_per_row of row
// t / blocks_per_row and runs quant::block_quantize (runtime/kernels/quant_elem.h) on it — the
// function the CPU runs per block, so the bits are the same by construction. It reads its
// block twice (max |x|, then the elements) and does the arithmetic in f64, as the CPU does.
//
// Why not a warp per block, as the MXINT8 kernels do: these formats take any block_size
// (1 .. the row), and their f64 arithmetic, not memory, is the cost; neighbouring threads read
// neighbouring blocks, so a warp's loads still fall in a few cache lines (block_size·32·4
// bytes). MXINT8 has the fast path (cuda/mxint8.cu), which quant/quantize.cpp uses.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/quant_block.h"
#include "runtime/kernels/quant_elem.h"

namespace mase::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void block_kernel(float* out, const float* inp, int64_t rows, int64_t cols,
                             quant::FormatParams f) {
  const int64_t bs = f.block_size, per_row = (cols + bs - 1) / bs, total = rows * per_row;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const int64_t r = t / per_row, j = (t % per_row) * bs;
    const int64_t n = cols - j < bs ? cols - j : bs;  // the last block of a row may be shorter
    quant::block_quantize(out + r * cols + j, inp + r * cols + j, n, f);
  }
}

}  // namespace

void block_forward(float* out, const float* inp, int64_t rows, int64_t cols,
                   const quant::FormatParams& f) {
  if (rows == 0 || cols == 0) return;
  const int64_t bs = f.block_size, total = rows * ((cols + bs - 1) / bs);
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  block_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream()>>>(
      out, inp, rows, cols, f);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
