// runtime/kernels/quant_block.h — fake quantization of the block formats (formats.md, "Block formats").
//
// A tensor is read as rows × cols with cols = the last dim (the reduction dim of a Linear);
// each row is cut into blocks of block_size consecutive elements, the last one possibly
// shorter. Per block, with amax = max |x| and floor(log2 amax) = ilogb(amax):
//   block_fp        e = clamp(floor(log2 amax), −b, 2^E−1−b); elements sign·k·2^(e+1−M),
//                   k = min(RNE(|x|/2^(e+1−M)), 2^M−1), M = W−1
//   block_minifloat b = clamp(2^E−1 − floor(log2 amax), 0, 2^Bw−1); elements minifloat_ieee(W,E,b)
//   block_log       b = clamp(2^(W−1)−1 − ceil(log2 amax), 0, 2^Bw−1); elements log(W, b)
//   mxint8          s = clamp(floor(log2 amax), −127, 127); q = clamp(RNE(x·64/2^s), −127, 127);
//                   value 2^s·q/64 (the E8M0 scale byte is s + 127)
//   mxfp*           s = clamp(floor(log2 amax) − emax_elem, −127, 127); value 2^s·elem(x/2^s)
// A block of zeros stays zeros; a block holding NaN or ±inf becomes all NaN (MX: scale 0xFF).
// The arithmetic is in f64 (every f32 input and every power of two involved is exact there),
// so these kernels favour clarity over speed; the packed MXINT8 kernels (mxint8.h) are the
// fast path for MXINT8. The arithmetic of one block is quant_elem.h's (block_plan, block_one;
// block_quantize is the two in a loop), which the CPU and the CUDA kernels both run.
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/kernels/quant_format.h"

namespace mase::cpu {

using quant::FormatParams;
using quant::Kind;

// out (rows, cols) = Q(inp) for a block format (block_fp, block_minifloat, block_log, mxint8,
// mxfp*). out may equal inp.
template <class T>
void block_forward(T* out, const T* inp, int64_t rows, int64_t cols, const quant::FormatParams& f);

// The shared parameter of one block as the formats define it (used by mase-quant to print it):
// block_fp: e; block_minifloat / block_log: the bias; MX: the E8M0 scale byte (0xFF = NaN).
int block_shared_param(const float* x, int64_t n, const quant::FormatParams& f);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/quant_block.cu ----
// block_size a power of two up to 32: a group of block_size lanes per block, lane i running
// block_one on element i; other sizes: one thread per block running block_quantize. The CPU's
// own functions, so the same bits. f32 device pointers. (mxint8 has a faster twin:
// cuda::mxint8_fake_quantize in mxint8.h.)
namespace mase::cuda {

MASE_CUDA_FN(void, block_forward, (float* out, const float* inp, int64_t rows, int64_t cols,
                                   const quant::FormatParams& f))

}  // namespace mase::cuda
