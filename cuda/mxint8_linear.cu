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
// Two kernels, a ladder of two steps (llm.c dev/cuda style): the simple one above, which takes
// any shape, and a 128 × 128 one (below) with 8 × 8 outputs per thread, vector loads and a
// register prefetch, for K a multiple of 32. No tensor cores (fp32 FFMA only). mase-bench
// --suite gpu-quant times both against cuBLAS sgemm on the dequantized weight.
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

// ---- the 128 × 128 kernel: 8 × 8 outputs per thread, float4 everywhere, a register prefetch --
// When K is a multiple of 32 and x and W are 16-byte aligned (every BERT Linear), each step's
// loads are vectors: thread t loads 4 float4 of x (rows t/8 + 32i, k (t%8)·4..+3) and one
// 16-byte word of W (16 int8 of row t/2, k (t%2)·16..+15) with its row's scale byte. A thread
// owns the outputs rows ty·4 + {0..3, 64..67} × columns tx·4 + {0..3, 64..67}, so its A and B
// operands are two float4 each per k (a warp reads 16 distinct float4 of B: conflict-free).
// The next step's loads are issued into registers before this step's 32 rank-1 updates, so
// global memory latency hides behind the arithmetic without a second shared-memory buffer.
namespace big {

constexpr int BM = 128, BN = 128, BK = 32;

__global__ void __launch_bounds__(kThreads)
mxint8_linear_kernel(float* y, const float* x, const int8_t* wq, const uint8_t* ws,
                     const float* bias, int64_t M, int64_t N, int64_t K) {
  __shared__ __align__(16) float As[BK][BM];  // x tile, transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];  // decoded weight tile, transposed: Bs[k][n]
  const int t = threadIdx.x, ty = t / 16, tx = t % 16;
  const int xr = t / 8, xk = (t % 8) * 4;   // this thread's x loads: rows xr + 32i, k xk..xk+3
  const int wr = t / 2, wk = (t % 2) * 16;  // its W load: row wr, k wk..wk+15
  const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN, nb = K / BK;
  float4 xa[4];
  uint4 wv;
  uint32_t sc;
  auto load = [&](int64_t k0) {  // global -> registers
    for (int i = 0; i < 4; ++i) {
      const int64_t gm = m0 + xr + 32 * i;
      xa[i] = gm < M ? *reinterpret_cast<const float4*>(x + gm * K + k0 + xk) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const int64_t gn = n0 + wr;
    wv = gn < N ? *reinterpret_cast<const uint4*>(wq + gn * K + k0 + wk) : make_uint4(0u, 0u, 0u, 0u);
    sc = gn < N ? uint32_t(ws[gn * nb + k0 / BK]) : 0u;  // s = 0 with q = 0 decodes to 0
  };
  auto stage = [&]() {  // registers -> shared memory, decoding W on the way
    for (int i = 0; i < 4; ++i) {
      As[xk + 0][xr + 32 * i] = xa[i].x;
      As[xk + 1][xr + 32 * i] = xa[i].y;
      As[xk + 2][xr + 32 * i] = xa[i].z;
      As[xk + 3][xr + 32 * i] = xa[i].w;
    }
    const float step = quant::mx_step(sc);
    const uint32_t w4[4] = {wv.x, wv.y, wv.z, wv.w};  // little-endian: byte c of word c/4 is k + c
    for (int c = 0; c < 16; ++c)
      Bs[wk + c][wr] = quant::mx_decode_mul(int8_t(w4[c / 4] >> (8 * (c % 4))), step);
  };
  float acc[8][8] = {};
  load(0);
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    stage();
    __syncthreads();
    if (k0 + BK < K) load(k0 + BK);  // in flight while the tile below is used
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][ty * 4 + 64]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][tx * 4 + 64]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // the next stage() overwrites the tiles
  }
  // y = acc + b: row i of the thread is ty·4 + i%4 + 64·(i/4), column j likewise with tx
  const bool vec = (N & 3) == 0;  // then a run of 4 columns starting at a multiple of 4 is whole
  for (int i = 0; i < 8; ++i) {
    const int64_t gm = m0 + ty * 4 + (i % 4) + 64 * (i / 4);
    if (gm >= M) continue;
    for (int h = 0; h < 2; ++h) {
      const int64_t gn = n0 + tx * 4 + 64 * h;
      float v[4];
      for (int j = 0; j < 4; ++j) v[j] = acc[i][4 * h + j] + (bias && gn + j < N ? bias[gn + j] : 0.f);
      if (vec && gn < N) {
        *reinterpret_cast<float4*>(y + gm * N + gn) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
        for (int j = 0; j < 4; ++j)
          if (gn + j < N) y[gm * N + gn + j] = v[j];
      }
    }
  }
}

}  // namespace big

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void mxint8_linear_forward(float* y, const float* x, const int8_t* wq, const uint8_t* ws,
                           const float* bias, int64_t M, int64_t N, int64_t K, int kernel) {
  if (M == 0 || N == 0) return;
  const bool big_ok = K > 0 && K % 32 == 0 && aligned16(x) && aligned16(wq) && aligned16(y);
  if (kernel == 2 || (kernel == 0 && big_ok)) {
    MASE_CHECK(big_ok, ShapeError, "[mxint8_linear] the 128 x 128 kernel needs K a positive multiple"
               " of 32 and 16-byte aligned x, W and y, got K = ", K);
    const int64_t gx = (N + big::BN - 1) / big::BN, gy = (M + big::BM - 1) / big::BM;
    MASE_CHECK(gy <= 65535, ShapeError, "[mxint8_linear] expected at most ", 65535 * big::BM,
               " rows, got ", M, " (split the batch)");
    big::mxint8_linear_kernel<<<dim3(unsigned(gx), unsigned(gy)), kThreads, 0, stream()>>>(
        y, x, wq, ws, bias, M, N, K);
  } else {
    const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
    MASE_CHECK(gy <= 65535, ShapeError, "[mxint8_linear] expected at most ", 65535 * BM,
               " rows, got ", M, " (split the batch)");
    mxint8_linear_kernel<<<dim3(unsigned(gx), unsigned(gy)), kThreads, 0, stream()>>>(y, x, wq, ws,
                                                                                     bias, M, N, K);
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
