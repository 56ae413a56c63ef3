// runtime/cpu/bf16_amx.cpp — C = alpha · op(A) · op(B) + beta · C with bf16 operands and fp32
// sums on AMX tiles (runtime/kernels/bf16.h, amx_bf16_gemm): the driver. It packs op(B) once
// per call (every 16 columns into 1 KB tiles of pairs of k), then cuts C into chunks of rows ×
// groups of columns, one task each: a task rounds its rows of op(A) into a buffer of its own
// and runs the tile kernel over its columns (runtime/cpu/bf16_gemm_amx.cpp). The operands are
// fp32 and rounded while they are packed — the rounding pass and the bf16 copies the oneDNN
// path makes (onednn_bf16_gemm) are folded into the packing every GEMM needs anyway. A bias is
// added as the blocks of C are stored, and GELU after it where asked (BERT's FFN under
// inference: y = gelu(x·W1ᵀ + b1) in one pass over y). For frozen inference a Linear's weight
// is packed once (amx_bf16_pack) and every later call skips that step (amx_bf16_linear).
//
// Blocking, for BERT's shapes (M = 8,192 token rows, N and K of 128..3,072): a chunk of 256
// rows of A is kp · 512 bytes (256 KB at K 512: in the 2 MB L2), the kernel sweeps the columns
// 32 at a time (a pair of B's column blocks: 32 KB at K 512) and, inside, the chunk's rows 32
// at a time — B's pair stays in L1 while the chunk's rows stream from L2.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "runtime/cpu/amx_buffer.h"
#include "runtime/cpu/bf16_amx_tile.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

namespace mase::cpu {

namespace {
std::atomic<bool> g_amx_enabled{true};
}

// AMX-BF16 and AVX512-BF16 (the packers round with its vcvtne2ps2bf16): every CPU with the
// first has the second, but the check costs nothing
bool amx_bf16_available() { return cpu_features().amx_bf16 && cpu_features().avx512_bf16; }
void set_amx_bf16_enabled(bool on) { g_amx_enabled = on; }
bool amx_bf16_active() { return g_amx_enabled.load(std::memory_order_relaxed) && amx_bf16_available(); }

// The weight of amx_bf16_pack: op(B) = Wᵀ in the driver's tiles, made once.
struct AmxBf16Weights {
  int64_t out = 0, in = 0, kp = 0;
  std::vector<uint16_t> tiles;  // (out / 16 blocks) × kp × 16, 64-byte aligned (aligned_tiles)
  const uint16_t* data = nullptr;
};

namespace {

// op(B) (K × N, stored N × K when tb) into 16-column blocks of kp / 32 tiles each
const uint16_t* pack_b(std::vector<uint16_t>& buf, bool tb, int64_t N, int64_t K, int64_t kp,
                       const float* B, int64_t ldb) {
  const int64_t blocks = (N + 15) / 16;
  uint16_t* bp = aligned_tiles(buf, blocks * kp * 16);
  parallel_for(0, blocks, std::max<int64_t>(1, 16384 / kp), [&](int64_t b0, int64_t b1) {
    amx_pack_b(B, ldb, tb, N, K, kp, b0, b1, bp);
  });
  return bp;
}

int64_t padded_k(int64_t K) { return std::max<int64_t>(kAmxK, (K + kAmxK - 1) / kAmxK * kAmxK); }

// C = alpha · op(A) · B + beta · C (+ bias), B already packed (pack_b) with depth kp
void run(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
         const uint16_t* bp, int64_t kp, float beta, float* C, int64_t ldc, const float* bias,
         bool gelu) {
  // tasks: chunks of 32..256 rows × groups of columns (multiples of 32), about 4 per thread
  // (one [CLS] row per sequence, M = batch, still fills every thread); a deep K (dW = dyᵀ·x,
  // K = 8,192 token rows) in blocks of kKBlock, each adding to C, so a chunk of A stays in L2
  constexpr int64_t kMaxChunkRows = 256, kKBlock = 1024;
  const int64_t want = 4 * num_threads(), col_pairs = (N + 31) / 32;
  const int64_t chunk_rows = std::clamp<int64_t>(((M + want - 1) / want + 31) / 32 * 32, 32, kMaxChunkRows);
  const int64_t chunks = (M + chunk_rows - 1) / chunk_rows;
  const int64_t groups = std::clamp<int64_t>((want + chunks - 1) / chunks, 1, col_pairs);
  const int64_t group_cols = (col_pairs + groups - 1) / groups * 32;
  const int64_t kblocks = (kp + kKBlock - 1) / kKBlock;
  parallel_for(0, chunks * groups, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<uint16_t> packed_a;
    uint16_t* ap = aligned_tiles(packed_a, chunk_rows * std::min(kp, kKBlock));
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i0 = (task / groups) * chunk_rows, rows = std::min(chunk_rows, M - i0);
      const int64_t j0 = (task % groups) * group_cols, j1 = std::min(N, j0 + group_cols);
      if (j0 >= j1) continue;
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        const int64_t k0 = kb * kKBlock, kd = std::min(kKBlock, std::max<int64_t>(K - k0, 0));
        const int64_t kpd = std::min(kKBlock, kp - k0);
        // the block's columns of op(A): A advanced by k0 columns (rows when stored transposed)
        amx_pack_a(A + (ta ? k0 * lda : k0), lda, ta, i0, rows, kd, kpd, ap);
        // the first block of k sets C (beta, the bias), the later ones add to it
        AmxChunk c{ap, rows, kpd, bp, kp, k0 / kAmxK, j0, j1, N, C + i0 * ldc, ldc,
                   alpha, kb == 0 ? beta : 1.0f, kb == 0 ? bias : nullptr,
                   gelu && kb == kblocks - 1};  // GELU on the finished sums only
        amx_bf16_chunk(c);
      }
    }
  });
}

}  // namespace

void amx_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                   const float* bias, bool gelu) {
  MASE_CHECK(M >= 0 && N >= 0 && K >= 0, ShapeError, "[amx_bf16_gemm] expected sizes ≥ 0, got M=",
             M, " N=", N, " K=", K);
  MASE_CHECK(amx_bf16_available(), ConfigError,
             "[amx_bf16_gemm] this CPU has no AMX-BF16 (or Linux did not grant the tile state)");
  if (M == 0 || N == 0) return;
  const int64_t kp = padded_k(K);
  thread_local std::vector<uint16_t> packed_b;
  const uint16_t* bp = pack_b(packed_b, tb, N, K, kp, B, ldb);
  run(ta, M, N, K, alpha, A, lda, bp, kp, beta, C, ldc, bias, gelu);
}

std::shared_ptr<const AmxBf16Weights> amx_bf16_pack(const float* W, int64_t ldw, int64_t out, int64_t in) {
  MASE_CHECK(out >= 0 && in >= 0 && ldw >= in, ShapeError, "[amx_bf16_pack] expected W (out, in) with ",
             "a row stride ≥ in, got out=", out, " in=", in, " ldw=", ldw);
  MASE_CHECK(amx_bf16_available(), ConfigError,
             "[amx_bf16_pack] this CPU has no AMX-BF16 (or Linux did not grant the tile state)");
  auto w = std::make_shared<AmxBf16Weights>();
  w->out = out, w->in = in, w->kp = padded_k(in);
  if (out > 0) w->data = pack_b(w->tiles, /*tb=*/true, out, in, w->kp, W, ldw);
  return w;
}

size_t amx_bf16_bytes(const AmxBf16Weights& w) { return w.tiles.size() * sizeof(uint16_t); }
int64_t amx_bf16_out(const AmxBf16Weights& w) { return w.out; }
int64_t amx_bf16_in(const AmxBf16Weights& w) { return w.in; }

void amx_bf16_linear(float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows,
                     const AmxBf16Weights& w, const float* bias, bool gelu) {
  MASE_CHECK(rows >= 0, ShapeError, "[amx_bf16_linear] expected rows ≥ 0, got ", rows);
  if (rows == 0 || w.out == 0) return;
  run(/*ta=*/false, rows, w.out, w.in, 1.0f, x, ldx, w.data, w.kp, 0.0f, y, ldy, bias, gelu);
}

}  // namespace mase::cpu
