// runtime/cpu/bf16_amx_tile.h — what the AMX-BF16 GEMM driver (bf16_amx.cpp) and the bf16
// attention (sdpa_amx.cpp) hand the code compiled for AVX512-BF16 and AMX: the packers that round
// fp32 into the tiles' layouts (bf16_pack_avx512.cpp), and the kernels that run one chunk of
// rows (AMX's in bf16_gemm_amx.cpp, a vdpbf16ps twin in bf16_gemm_avx512.cpp). Plain structs and
// functions, nothing shared with the rest of the build (why: runtime/cpu/int8_tile.h).
//
// The layouts (K padded with zeros to kp, a multiple of 32 — one tile's depth):
//   A  per 16 rows, kp / 32 tiles of 1 KB, each 16 rows × 32 k row-major (so a tile loads with
//      a stride of 64 bytes, and a block of 16 rows is 16 · kp contiguous values); rows past
//      the real ones are zeros, to a multiple of 32 (two row tiles)
//   B  per block of 16 columns, kp / 32 tiles of 1 KB, each 16 rows × 16 columns × 2: row r
//      holds k = 2r and 2r + 1 of every column, side by side ("VNNI" pairs: what
//      tdpbf16ps multiplies with a row of A's pairs); columns past N are zeros
#pragma once
#include <cstdint>

namespace mase::cpu {

constexpr int64_t kAmxK = 32;     // k per tile (16 pairs of bf16 = 64 bytes a row)
constexpr int64_t kAmxRows = 16;  // rows of a tile; the kernel runs 2 × 2 tiles = 32 × 32 of C

// rows [i0, i0 + rows) of op(A) (A stored M × K, or K × M when ta), rounded to bf16 into `out`
// (rows_pad × kp, rows_pad = rows rounded up to 32; the padding zeroed)
void amx_pack_a(const float* A, int64_t lda, bool ta, int64_t i0, int64_t rows, int64_t K,
                int64_t kp, uint16_t* out);
// (for a block of k: A advanced to its first k, K the block's real depth, kp its padded one)

// the 16-column blocks [nb0, nb1) of op(B) (B stored K × N, or N × K when tb), rounded into
// `out` (the whole packed B: block nb at out + nb · kp · 16)
void amx_pack_b(const float* B, int64_t ldb, bool tb, int64_t N, int64_t K, int64_t kp,
                int64_t nb0, int64_t nb1, uint16_t* out);

struct AmxChunk {
  const uint16_t* a;  // packed A of this chunk (rows rounded up to 32 in memory)
  int64_t rows;       // its real rows
  int64_t kp;
  const uint16_t* b;  // the whole packed B (kp_b: its padded K)
  int64_t kp_b;
  int64_t kb0;        // A's first k tile is B's tile kb0 (A holds k tiles kb0 .. kb0 + kp / 32)
  int64_t j0, j1;     // columns of C to compute: j0 a multiple of 32, j1 ≤ N
  int64_t N;
  float* c;           // C's first row of this chunk, column 0
  int64_t ldc;
  float alpha, beta;  // C = alpha · A·B + beta · C (+ bias) (beta 0: C is not read)
  const float* bias;  // null, or N values added to C's columns (bias[j] to column j)
  bool gelu = false;  // C = gelu(alpha · A·B + beta · C + bias): BERT's FFN in the store
};
void amx_bf16_chunk(const AmxChunk& t);
// The same chunk with AVX512-BF16's vdpbf16ps on the same packed operands (bf16_gemm_avx512.cpp),
// for a CPU without AMX: the same rounded operands, fp32 sums in another order.
void avx512_bf16_chunk(const AmxChunk& t);

// y[i] = gelu(x[i]) for n floats, one thread, the bits of cpu::bias_gelu_forward (defined in
// runtime/cpu/gelu.cpp, compiled for the build's ISA and dispatched there: calling it from the
// AMX file carries no AMX or AVX-512 code out of it). y and x must not overlap.
void gelu_f32_serial(float* y, const float* x, int64_t n);

}  // namespace mase::cpu
