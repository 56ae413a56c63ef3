// cuda/sdpa_mma.cuh — the tile products of the tensor-core attention kernels
// (cuda/sdpa_forward_tc.cu, cuda/sdpa_backward_tc.cu), through CUDA's warp matrix API (wmma):
// a warp loads 16 × 8 and 8 × 16 pieces of two operands from shared memory into "fragments"
// and multiplies them on the tensor cores into a 16 × 16 accumulator fragment. Which element
// of a fragment a thread holds is the hardware's business; we only load, multiply, and store
// fragments to shared memory, where the FMA kernels' 16 × 16 thread grid takes over (the
// online softmax and dS need each score at a known thread). Included by .cu files only.
//
// TF32: the tensor cores read 19 bits of each fp32 operand (sign, 8 exponent bits, 10 mantissa
// bits), so a product a·b is good to ~2⁻¹¹ relative. tf32x3 recovers fp32 accuracy (~2⁻²¹, as
// CUTLASS's FastF32 and PyTorch's fp32 memory-efficient attention do): a = a_hi + a_lo with
// a_hi = tf32(a), a_lo = tf32(a − a_hi), and a·b ≈ a_lo·b_hi + a_hi·b_lo + a_hi·b_hi (the small
// terms first; a_lo·b_lo, ~2⁻²², is dropped). Three tensor-core products cost less than one
// fp32 FMA product on an H100 (TF32 runs at ~7× the fp32 FMA rate).
//
// The warp layout: the block's 8 warps split a 64-row tile into four 16-row bands (wr = warp
// % 4) and two column halves (wc = warp / 4). All shared-memory tiles are the FMA kernels'
// (cuda/sdpa_tile.cuh): rows padded by 4 floats, 64-row blocks, so every fragment's first
// element sits on a 32-byte boundary and every row stride is a multiple of 16 bytes, as
// load_matrix_sync / store_matrix_sync require.
#pragma once
#include <mma.h>

#include "cuda/sdpa_tile.cuh"

namespace mase::cuda::sdpa_mma {

using namespace sdpa_tile;
namespace wmma = nvcuda::wmma;

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;

// An operand fragment as the tensor cores take it: its fp32 values rounded to TF32 (hi) and,
// for tf32x3 (k3), what the rounding lost, rounded again (lo). Made once per loaded fragment
// and used for every product it enters (the conversions cost issue slots, not tensor time).
template <bool k3, class Frag>
struct Tf32 {
  Frag hi, lo;  // lo unused without k3
};
template <bool k3, class Frag>
__device__ inline Tf32<k3, Frag> to_tf32(const Frag& x) {
  Tf32<k3, Frag> t;
#pragma unroll
  for (int e = 0; e < x.num_elements; ++e) {
    const float v = x.x[e], h = wmma::__float_to_tf32(v);
    t.hi.x[e] = h;
    if constexpr (k3) t.lo.x[e] = wmma::__float_to_tf32(v - h);
  }
  return t;
}

// acc += a·b on the tensor cores: one TF32 product, or (k3) the three of tf32x3.
template <bool k3, class FA, class FB>
__device__ inline void mma(Acc& acc, const Tf32<k3, FA>& a, const Tf32<k3, FB>& b) {
  if constexpr (k3) {
    wmma::mma_sync(acc, a.lo, b.hi, acc);
    wmma::mma_sync(acc, a.hi, b.lo, acc);
  }
  wmma::mma_sync(acc, a.hi, b.hi, acc);
}

template <int N>
__device__ inline void zero(Acc (&acc)[N]) {
#pragma unroll
  for (int n = 0; n < N; ++n) wmma::fill_fragment(acc[n], 0.f);
}

// acc[n] += A[16·wr .. +16, :]·B[32·wc + 16·n .. +16, :]ᵀ (n < 2): the warp's two 16 × 16 pieces
// of a 64 × 64 tile A·Bᵀ (S = Q·Kᵀ, dP = dO·Vᵀ). A, B: (64, HS), row stride kLd<HS>. Bᵀ is B
// read as a column-major 8 × 16 operand: element (k, n) of Bᵀ is B[n][k].
template <int HS, bool k3>
__device__ inline void warp_abt(Acc (&acc)[2], const float* A, const float* B, int wr, int wc) {
#pragma unroll 2
  for (int d = 0; d < HS; d += 8) {
    FragA a;
    wmma::load_matrix_sync(a, A + 16 * wr * kLd<HS> + d, kLd<HS>);
    const auto a_t = to_tf32<k3>(a);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      FragBT b;
      wmma::load_matrix_sync(b, B + (32 * wc + 16 * n) * kLd<HS> + d, kLd<HS>);
      mma<k3>(acc[n], a_t, to_tf32<k3>(b));
    }
  }
}

// The columns of a 64 × HS output the warp owns: HS / 32 pieces of 16, from wc·HS/2.
template <int HS>
constexpr int kOutFrags = HS / 32;

// acc[n] += P[16·wr .. +16, :]·X[:, wc·HS/2 + 16·n .. +16]: the warp's pieces of the 64 × HS
// product P·X (O's P·V, dQ's dS·K). P: (64, 64), row stride kLdP; X: (64, HS), kLd<HS>.
template <int HS, bool k3>
__device__ inline void warp_ab(Acc (&acc)[kOutFrags<HS>], const float* P, const float* X, int wr,
                               int wc) {
#pragma unroll 2
  for (int k = 0; k < kBc; k += 8) {
    FragA a;
    wmma::load_matrix_sync(a, P + 16 * wr * kLdP + k, kLdP);
    const auto a_t = to_tf32<k3>(a);
#pragma unroll
    for (int n = 0; n < kOutFrags<HS>; ++n) {
      FragB b;
      wmma::load_matrix_sync(b, X + k * kLd<HS> + wc * (HS / 2) + 16 * n, kLd<HS>);
      mma<k3>(acc[n], a_t, to_tf32<k3>(b));
    }
  }
}

// acc[n] += P[:, 16·wr .. +16]ᵀ·X[:, wc·HS/2 + 16·n .. +16]: the warp's pieces of Pᵀ·X (dV's
// Pᵀ·dO, dK's dSᵀ·Q). Pᵀ is P read as a column-major 16 × 8 operand: element (m, k) of Pᵀ is
// P[k][m], at P + k·kLdP + m.
template <int HS, bool k3>
__device__ inline void warp_atb(Acc (&acc)[kOutFrags<HS>], const float* P, const float* X, int wr,
                                int wc) {
#pragma unroll 2
  for (int k = 0; k < kBr; k += 8) {
    FragAT a;
    wmma::load_matrix_sync(a, P + k * kLdP + 16 * wr, kLdP);
    const auto a_t = to_tf32<k3>(a);
#pragma unroll
    for (int n = 0; n < kOutFrags<HS>; ++n) {
      FragB b;
      wmma::load_matrix_sync(b, X + k * kLd<HS> + wc * (HS / 2) + 16 * n, kLd<HS>);
      mma<k3>(acc[n], a_t, to_tf32<k3>(b));
    }
  }
}

// The warp's pieces of a 64 × 64 tile (from warp_abt) into shared memory, row stride kLdP.
__device__ inline void store_scores(float* S, const Acc (&acc)[2], int wr, int wc) {
#pragma unroll
  for (int n = 0; n < 2; ++n)
    wmma::store_matrix_sync(S + 16 * wr * kLdP + 32 * wc + 16 * n, acc[n], kLdP,
                            wmma::mem_row_major);
}

// The warp's pieces of a 64 × HS tile (from warp_ab, warp_atb) into shared memory, kLd<HS>.
template <int HS>
__device__ inline void store_rows(float* X, const Acc (&acc)[kOutFrags<HS>], int wr, int wc) {
#pragma unroll
  for (int n = 0; n < kOutFrags<HS>; ++n)
    wmma::store_matrix_sync(X + 16 * wr * kLd<HS> + wc * (HS / 2) + 16 * n, acc[n], kLd<HS>,
                            wmma::mem_row_major);
}

}  // namespace mase::cuda::sdpa_mma
