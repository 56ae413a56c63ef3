// cuda/softmax.cu — softmax / log_softmax on the GPU (twin of runtime/cpu/softmax.cpp): which
// kernel of cuda/softmax_rows.cuh runs for which row length, and why.
//
// Softmax is memory-bound: per element it reads 4 bytes and writes 4, and does a handful of
// flops. So the one thing that matters is touching global memory as little as possible —
// once per input element, once per output element — and keeping enough loads in flight.
//   cols ≤ 1024 (BERT's attention rows, T ≤ 512): one WARP per row, the row in registers.
//     A warp is 32 threads that execute together, so its max and sum are 5 register
//     shuffles each: no shared memory, no __syncthreads, and 4 rows per 128-thread block
//     keep the SMs full even when rows are short. float4 loads when the rows are 16-byte
//     aligned (cols % 4 == 0): a quarter of the load instructions.
//   1024 < cols ≤ 12032: one BLOCK per row, the row copied into shared memory as it is read
//     (47 KB: a block gets 48 KB without opting in, its static part included), so the write
//     sweep reads it from there: still one read of global memory.
//   longer rows: one block per row, online (max, sum) in the first sweep, a second read of
//     the row to write it (2 reads + 1 write: the price of not holding the row anywhere).
// Backward the same way: dx needs Σ dy·y (or Σ dy) over the row, then one elementwise pass;
// the warp kernel holds dy and y in registers, the block kernel caches them (≤ 6016 cols).
//
// The kernel ladder that led here (three sweeps → online → cached → warp per row), each
// version timed by `mase-bench --suite gpu-softmax` (gpu-softmax/ladder/v<k>), is
// cuda/softmax_ladder.cu; the lesson is docs/gpu-kernels.md ("Softmax: the ladder"), the
// figures docs/performance.md ("GPU kernels"). Same math and fully-masked-row rule as the CPU.
#include "cuda/softmax_rows.cuh"
#include "runtime/kernels/softmax.h"

namespace mase::cuda {
namespace {

using namespace softmax_rows;

void check_cols(const char* op, int64_t cols) {
  MASE_CHECK(cols < (int64_t(1) << 31), ShapeError, "[", op,
             "] expected fewer than 2^31 columns, got ", cols);
}

template <bool kLog>
void forward(float* out, const float* inp, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  check_cols(kLog ? "log_softmax" : "softmax", cols);
  const int c = static_cast<int>(cols);
  const bool vec4 = cols % 4 == 0 && aligned16(out) && aligned16(inp);
  if (cols <= kMaxWarpCols) {
    if (vec4) launch_warp_forward<kLog, 4>(out, inp, rows, c);
    else launch_warp_forward<kLog, 1>(out, inp, rows, c);
    return;
  }
  const bool cache = forward_cache_bytes(cols) <= kCacheBytes;
  if (vec4) launch_block_forward<kLog, 4>(out, inp, rows, c, cache);
  else launch_block_forward<kLog, 1>(out, inp, rows, c, cache);
}

template <bool kLog>
void backward(float* dinp, const float* dout, const float* out, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  check_cols(kLog ? "log_softmax" : "softmax", cols);
  const int c = static_cast<int>(cols);
  const bool vec4 = cols % 4 == 0 && aligned16(dinp) && aligned16(dout) && aligned16(out);
  if (cols <= kMaxWarpCols) {
    if (vec4) launch_warp_backward<kLog, 4>(dinp, dout, out, rows, c);
    else launch_warp_backward<kLog, 1>(dinp, dout, out, rows, c);
    return;
  }
  const bool cache = backward_cache_bytes(cols) <= kCacheBytes;
  if (vec4) launch_block_backward<kLog, 4>(dinp, dout, out, rows, c, cache);
  else launch_block_backward<kLog, 1>(dinp, dout, out, rows, c, cache);
}

}  // namespace

void softmax_forward(float* out, const float* inp, int64_t rows, int64_t cols) {
  forward<false>(out, inp, rows, cols);
}
void softmax_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                      int64_t cols) {
  backward<false>(dinp, dout, out, rows, cols);
}
void log_softmax_forward(float* out, const float* inp, int64_t rows, int64_t cols) {
  forward<true>(out, inp, rows, cols);
}
void log_softmax_backward(float* dinp, const float* dout, const float* out, int64_t rows,
                          int64_t cols) {
  backward<true>(dinp, dout, out, rows, cols);
}

}  // namespace mase::cuda
