// cuda/mxint8_mma.cu — MXINT8 × MXINT8 on the int8 tensor cores: what "MXINT8 benefits the
// hardware" means (Lab 4.3a), measured. Contract: runtime/kernels/mxint8_linear.h. A benchmark
// kernel (mase-bench --suite gpu-quant), not used by a model.
//
// y (M, N) = x·Wᵀ with both operands packed as MXINT8 along K (blocks of 32, one E8M0 scale
// each). Within one block every product shares the scale 2^(sx−133)·2^(sw−133), so
//   y[m, n] = Σ_blocks 2^(sx[m,b]−133) · 2^(sw[n,b]−133) · Σ_{k in block} qx[m,k]·qw[n,k]
// and the inner sum is an exact int8 dot product with an int32 result: one tensor-core
// instruction, mma.sync.m16n8k32.s8 (K = 32 = one MX block), per 16 × 8 outputs. The scales are
// applied once per block after it, by the CPU int8 GEMM's rule (runtime/kernels/int8_scale.h):
// acc = fma(float(c), sx·sw, acc) block after block from acc = 0, the exact term rounded once,
// also where sx·sw leaves fp32's range (then in another order, mma_block) — so y equals
// cpu::int8_gemm_scaled_reference on the same codes and scales mx_step(s) bit for bit, even for
// extreme shared exponents. (Not (c·sx)·sw: c·2^121 is inf where c·2^121·2^−93 is not.)
// Per element the tensor core reads 1 byte instead of 4, and an H100's int8 tensor cores do ~30×
// the multiply-adds of its fp32 FFMA units.
//
// The tiling: a thread block owns a 128 × 128 tile of y with 8 warps in a 2 × 4 grid; a warp
// owns 64 × 32 outputs, i.e. 4 × 4 tiles of 16 × 8, 16 mma per block of K. Per block of K the
// int8 tiles (128 rows × 32 bytes of x and of W) are loaded with one 16-byte load per thread into
// shared memory, rows padded to 48 bytes so the fragment reads (row gid, 4 bytes at tid·4, for
// the 32 lanes) hit 32 different banks; the scale bytes come along (threads 0..127: x, 128..255:
// W). Fragment layout of m16n8k32.s8 (PTX ISA), gid = lane / 4, tid = lane % 4:
//   A (16 × 32, row)  a0 = A[gid][tid·4..+3]  a1 = A[gid+8][tid·4..]  a2 = A[gid][16+tid·4..]  a3 = A[gid+8][16+tid·4..]
//   B (32 × 8, col)   b0 = B[tid·4..+3][gid]  b1 = B[16+tid·4..][gid]   (B[k][n] = W[n][k]: a row of W)
//   C (16 × 8)        c0 = C[gid][tid·2]  c1 = C[gid][tid·2+1]  c2 = C[gid+8][tid·2]  c3 = C[gid+8][tid·2+1]
// Requirements: K a multiple of 32, every pointer 16-byte aligned, finite scales (0xFF, NaN
// blocks, are not handled: a benchmark kernel). Any M and N.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/int8_scale.h"
#include "runtime/kernels/mxint8_linear.h"
#include "runtime/kernels/quant_elem.h"

namespace mase::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 32, kThreads = 256;
constexpr int kRow = 48;  // bytes per shared-memory row: 32 of data + 16 of padding (banks)

__device__ __forceinline__ void mma_s8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Step 2 below for one block of K: the 16 mma of this warp's 64 × 32 outputs, then the block's
// scales on their int32 sums c by the CPU reference's rule, acc = fma(float(c), sa·sb, acc)
// (int8_add_block, runtime/kernels/int8_scale.h). Two copies:
//   kExtreme false, the common case: every product sa·sb this thread meets is inside fp32's
//     normal range (the caller checks), where the rule is exactly that fma;
//   kExtreme true: some product leaves it (a block of 2^121 or 2^−133): int8_add_block_pow2,
//     the same bits for MXINT8's scales, in fp32 (int8_add_block's double branch, inlined
//     here, took the kernel from 128 registers to 193: one block per SM instead of two).
// __launch_bounds__(kThreads, 2) holds the kernel with both copies to 128 registers (ptxas -v:
// 128 and 4 bytes spilled, as the kernel had with its one loop before).
template <bool kExtreme>
__device__ __forceinline__ void mma_block(float (&acc)[4][4][4], const uint32_t (&a)[4][4],
                                          const uint32_t (&b)[4][2], const float* sa,
                                          const float* sb, int wm, int wn, int gid, int tid) {
#pragma unroll  // (acc stays in registers only while every index is a constant)
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int c[4] = {0, 0, 0, 0};
      mma_s8(c, a[i], b[j][0], b[j][1]);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = wm + 16 * i + gid + 8 * (e / 2), n = wn + 8 * j + tid * 2 + (e % 2);
        float& f = acc[i][j][e];  // |c| < 2^19: exact in f32
        if (kExtreme) f = int8_add_block_pow2(f, c[e], sa[r], sb[n]);
        else f = fmaf(float(c[e]), sa[r] * sb[n], f);
      }
    }
}

__global__ void __launch_bounds__(kThreads, 2)  // 2 blocks per SM: at most 128 registers
mxint8_mma_kernel(float* y, const int8_t* xq, const uint8_t* xs, const int8_t* wq,
                  const uint8_t* ws, int64_t M, int64_t N, int64_t K) {
  __shared__ __align__(16) int8_t As[BM * kRow];
  __shared__ __align__(16) int8_t Bs[BN * kRow];
  __shared__ float sa[BM], sb[BN];  // 2^(s−133) of each row's block
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, gid = lane / 4, tid = lane % 4;
  const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;  // the warp's corner in the tile
  const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN, nb = K / BK;
  const int lr = t / 2, lh = (t % 2) * 16;  // this thread's loads: row lr, bytes lh..lh+15
  float acc[4][4][4] = {};
  for (int64_t kb = 0; kb < nb; ++kb) {
    // 1. the block's int8 tiles and scales into shared memory (rows beyond M or N: zeros)
    const int64_t gm = m0 + lr, gn = n0 + lr;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    *reinterpret_cast<uint4*>(&As[lr * kRow + lh]) =
        gm < M ? *reinterpret_cast<const uint4*>(xq + gm * K + kb * BK + lh) : zero;
    *reinterpret_cast<uint4*>(&Bs[lr * kRow + lh]) =
        gn < N ? *reinterpret_cast<const uint4*>(wq + gn * K + kb * BK + lh) : zero;
    // (a row beyond M or N has codes 0, so any scale gives it 0; 1 keeps it out of the way of
    // the range test in step 2)
    if (t < BM) sa[t] = m0 + t < M ? quant::mx_step(xs[(m0 + t) * nb + kb]) : 1.f;
    else sb[t - BM] = n0 + (t - BM) < N ? quant::mx_step(ws[(n0 + t - BM) * nb + kb]) : 1.f;
    __syncthreads();
    // 2. fragments, 16 mma, then the block's scales on the int32 results (mma_block)
    uint32_t a[4][4], b[4][2];
    for (int i = 0; i < 4; ++i) {
      const int r = wm + 16 * i + gid;
      a[i][0] = *reinterpret_cast<const uint32_t*>(&As[r * kRow + tid * 4]);
      a[i][1] = *reinterpret_cast<const uint32_t*>(&As[(r + 8) * kRow + tid * 4]);
      a[i][2] = *reinterpret_cast<const uint32_t*>(&As[r * kRow + 16 + tid * 4]);
      a[i][3] = *reinterpret_cast<const uint32_t*>(&As[(r + 8) * kRow + 16 + tid * 4]);
    }
    for (int j = 0; j < 4; ++j) {
      const int n = wn + 8 * j + gid;
      b[j][0] = *reinterpret_cast<const uint32_t*>(&Bs[n * kRow + tid * 4]);
      b[j][1] = *reinterpret_cast<const uint32_t*>(&Bs[n * kRow + 16 + tid * 4]);
    }
    // this thread's rows and columns: the extremes of their scales bound every product
    // (rounding is monotonic), so one test per block says whether all are in range
    float lo_a = INFINITY, hi_a = 0.f, lo_b = INFINITY, hi_b = 0.f;
    for (int h = 0; h < 8; ++h) {
      const float va = sa[wm + 16 * (h / 2) + gid + 8 * (h % 2)];
      const float vb = sb[wn + 8 * (h / 2) + tid * 2 + h % 2];
      lo_a = fminf(lo_a, va), hi_a = fmaxf(hi_a, va);
      lo_b = fminf(lo_b, vb), hi_b = fmaxf(hi_b, vb);
    }
    if (int8_scale_in_range(lo_a * lo_b) && int8_scale_in_range(hi_a * hi_b))
      mma_block<false>(acc, a, b, sa, sb, wm, wn, gid, tid);
    else  // a block of 2^121 or 2^−133, say: rare
      mma_block<true>(acc, a, b, sa, sb, wm, wn, gid, tid);
    __syncthreads();  // the next block overwrites the tiles
  }
  // 3. store, masked at the edges
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 4; ++e) {
        const int64_t gm = m0 + wm + 16 * i + gid + 8 * (e / 2), gn = n0 + wn + 8 * j + tid * 2 + (e % 2);
        if (gm < M && gn < N) y[gm * N + gn] = acc[i][j][e];
      }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void mxint8_mma_forward(float* y, const int8_t* xq, const uint8_t* xs, const int8_t* wq,
                        const uint8_t* ws, int64_t M, int64_t N, int64_t K) {
  MASE_CHECK(K % BK == 0 && aligned16(xq) && aligned16(wq), ShapeError,
             "[mxint8_mma] expected K a multiple of 32 and 16-byte aligned operands, got K = ", K);
  if (M == 0 || N == 0) return;
  const int64_t gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
  MASE_CHECK(gy <= 65535, ShapeError, "[mxint8_mma] expected at most ", 65535 * BM, " rows, got ", M);
  mxint8_mma_kernel<<<dim3(unsigned(gx), unsigned(gy)), kThreads, 0, stream()>>>(y, xq, xs, wq, ws, M, N, K);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
