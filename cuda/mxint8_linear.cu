// cuda/mxint8_linear.cu — y = x·dequant(W)ᵀ + b with W kept packed as MXINT8 (contract and
// layout: runtime/kernels/mxint8_linear.h). A tiled fp32 GEMM whose weight tiles are decoded
// from int8 + E8M0 while they are staged into shared memory.
//
// The tiling (the classic shared-memory GEMM, as in CUTLASS's and llm.c's introductions):
//  * A thread block computes a 64 × 64 tile of y (rows m0.., columns n0..) with 256 threads,
//    each owning 4 × 4 outputs: rows ty + 16i, columns tx + 16j (i, j < 4) for thread
//    (ty, tx) = (t / 16, t % 16). Spreading a thread's outputs 16 apart (not 4 adjacent) makes
//    a warp's shared-memory reads hit 16 consecutive words of B: no bank conflicts.
//  * K is walked in steps of BK = 32 — exactly one MX block — so a weight tile row needs one
//    scale byte: block kt of row n, read once per row by the whole warp (a broadcast).
//  * Per step, x's tile (64 × 32 floats) and the weight's tile (64 × 32 int8 + 64 scales) are
//    loaded with consecutive threads on consecutive k (coalesced: a warp reads 128 bytes of x or
//    32 bytes of W per load), the weight elements decoded to f32 on the way
//    (quant::mx_decode_mul: 2^(s−133)·q, the dequantize kernel's own arithmetic), and stored
//    transposed, As[k][m] and Bs[k][n], with one float of padding per row so the transposing
//    stores do not collide in a bank (row stride 65 words).
//  * Then 32 rank-1 updates from shared memory: per k, 4 values of A, 4 of B, 16 fmas.
// Bytes read per weight element: 1 + 1/32 (int8 + its scale share), against 4 for fp32; no
// (N, K) fp32 copy of W exists at any time. Rows, columns and K that are not multiples of the
// tile are zero-padded in the loads (a zero adds nothing) and masked in the stores.
//
// This is the straightforward kernel, correctness first: no double buffering, no tensor cores.
// mase-bench --suite gpu-quant pairs it with cuBLAS sgemm on the dequantized weight.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/mxint8_linear.h"
#include "runtime/kernels/quant_elem.h"

namespace mase::cuda {
namespace {

constexpr int BM = 64, BN = 64, BK = 32;  // BK = one MX block
constexpr int kThreads = 256;
constexpr int kLoads = BM * BK / kThreads;  // 8 elements of each tile per thread per step
static_assert(BM == BN, "the loads below share one index mapping for A and B");

__global__ void __launch_bounds__(kThreads)
mxint8_linear_kernel(float* y, const float* x, const int8_t* wq, const uint8_t* ws,
                     const float* bias, int64_t M, int64_t N, int64_t K) {
  __shared__ float As[BK][BM + 1];  // x tile, transposed: As[k][m]
  __shared__ float Bs[BK][BN + 1];  // decoded weight tile, transposed: Bs[k][n]
  const int t = threadIdx.x, ty = t / 16, tx = t % 16;
  const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
  const int64_t nb = (K + BK - 1) / BK;  // scale bytes per weight row
  float acc[4][4] = {};
  for (int64_t k0 = 0, kt = 0; k0 < K; k0 += BK, ++kt) {
    // 1. stage the tiles: element e = t + 256·i is (row e / 32, k e % 32) of each tile
    for (int i = 0; i < kLoads; ++i) {
      const int e = t + kThreads * i, r = e / BK, k = e % BK;
      const int64_t gk = k0 + k;
      const int64_t gm = m0 + r;
      As[k][r] = (gm < M && gk < K) ? x[gm * K + gk] : 0.f;
      const int64_t gn = n0 + r;
      float w = 0.f;
      if (gn < N && gk < K) w = quant::mx_decode_mul(wq[gn * K + gk], quant::mx_step(ws[gn * nb + kt]));
      Bs[k][r] = w;
    }
    __syncthreads();
    // 2. 32 rank-1 updates of the 4 × 4 outputs
    for (int k = 0; k < BK; ++k) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // the next step overwrites the tiles
  }
  // 3. y = acc + b, masked at the edges
  for (int i = 0; i < 4; ++i) {
    const int64_t gm = m0 + ty + 16 * i;
    if (gm >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int64_t gn = n0 + tx + 16 * j;
      if (gn < N) y[gm * N + gn] = acc[i][j] + (bias ? bias[gn] : 0.f);
    }
  }
}

}  // namespace

void mxint8_linear_forward(float* y, const float* x, const int8_t* wq, const uint8_t* ws,
                           const float* bias, int64_t M, int64_t N, int64_t K) {
  if (M == 0 || N == 0) return;
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  MASE_CHECK(gy <= 65535, ShapeError, "[mxint8_linear] expected at most ", 65535 * BM,
             " rows, got ", M, " (split the batch)");
  mxint8_linear_kernel<<<dim3(unsigned(gx), unsigned(gy)), kThreads, 0, stream()>>>(y, x, wq, ws, bias,
                                                                                   M, N, K);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
