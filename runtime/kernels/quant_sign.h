// runtime/kernels/quant_sign.h — binary, binary_scaling, ternary and residual sign (formats.md).
//
// Rows are the rows of the last dim: a weight (out, in) has one row per output feature, an
// activation (B, T, C) one per token; a 1-D tensor is one row ("per tensor").
//   binary          +1 where x ≥ 0, else −1 (bipolar) or 0 (not bipolar)
//   stochastic      +1 with probability p = clamp((x+1)/2, 0, 1): u < p for u ~ U[0,1) drawn
//                   from Philox (runtime/random.h) at counter offset + i/4, word i%4
//   binary_scaling  α·binary(x), α = mean |x| over the row
//   ternary         δ = 0.75·mean|x| over the row; +α where x > δ, −α where x < −δ, else 0;
//                   α = mean of |x| over |x| > δ (scaling; 0 when none) or 1 (no scaling)
//   residual sign   L levels: s_l = sign(r_l) (+1 where r_l ≥ 0), r_1 = x,
//                   r_{l+1} = r_l − |μ_l|·s_l, out = Σ_l |μ_l|·s_l
// NaN stays NaN; a row holding NaN or ±inf has no meaningful mean, so binary_scaling and
// ternary make that whole row NaN (as block formats do with a block).
//
// Backward: the clipped straight-through estimator, dx = dy·[|x| ≤ 1], for all of them. The
// residual levels μ get their exact derivative: each s_l is constant under a small change of
// μ, so d out/d μ_l = sign(μ_l)·s_l, and dμ_l = sign(μ_l)·Σ dy·s_l (what gradcheck measures).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

template <class T>
void binary_forward(T* out, const T* inp, int64_t n, bool bipolar, bool stochastic, uint64_t seed,
                    uint64_t offset);

// out = α_row · binary(inp), rows × cols
template <class T>
void binary_scaling_forward(T* out, const T* inp, int64_t rows, int64_t cols, bool bipolar,
                            bool stochastic, uint64_t seed, uint64_t offset);

template <class T>
void ternary_forward(T* out, const T* inp, int64_t rows, int64_t cols, bool scaling);

// mu has `levels` entries (their absolute values are used)
template <class T>
void residual_sign_forward(T* out, const T* inp, const T* mu, int levels, int64_t n);
// dinp = dout·[|inp| ≤ 1] (may be null: not needed); dmu[l] = sign(μ_l)·Σ dout·s_l
template <class T>
void residual_sign_backward(T* dinp, T* dmu, const T* dout, const T* inp, const T* mu, int levels,
                            int64_t n);

// dinp = dout·[|inp| ≤ 1]
template <class T>
void clipped_ste_backward(T* dinp, const T* dout, const T* inp, int64_t n);

// binary_residual's weight form: out = |γ|·binary(inp) (bipolar, deterministic).
template <class T>
void binary_gamma_forward(T* out, const T* inp, T gamma, int64_t n);
// dinp = dout·|γ|·[|inp| ≤ 1] (may be null); returns dγ = sign(γ)·Σ dout·binary(inp).
template <class T>
T binary_gamma_backward(T* dinp, const T* dout, const T* inp, T gamma, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/quant_sign.cu ----
// f32 device pointers. Forward values equal the CPU's bit for bit: the element functions are
// quant_elem.h's, and a row's Σ|x| is summed in f64 in row_sum8's order (runtime/cpu/rowwise.h:
// 8 accumulators over i mod 8, then a fixed tree), one warp per row. μ and γ are read from
// device memory (they are trainable tensors on the GPU; reading them on the host would stall).
// The backward's sums over all elements (dμ, dγ) are reduced in a fixed order on the GPU too,
// but a different one from the CPU's: equal within rounding, not bit for bit.
namespace mase::cuda {

MASE_CUDA_FN(void, binary_forward, (float* out, const float* inp, int64_t n, bool bipolar,
                                    bool stochastic, uint64_t seed, uint64_t offset))
MASE_CUDA_FN(void, binary_scaling_forward, (float* out, const float* inp, int64_t rows,
                                            int64_t cols, bool bipolar, bool stochastic,
                                            uint64_t seed, uint64_t offset))
MASE_CUDA_FN(void, ternary_forward, (float* out, const float* inp, int64_t rows, int64_t cols,
                                     bool scaling))
// mu: `levels` values on the device, or nullptr for the initial levels (L, L−1, …, 1)/Σ
MASE_CUDA_FN(void, residual_sign_forward, (float* out, const float* inp, const float* mu,
                                           int levels, int64_t n))
// dinp may be null; dmu has `levels` entries on the device
MASE_CUDA_FN(void, residual_sign_backward, (float* dinp, float* dmu, const float* dout,
                                            const float* inp, const float* mu, int levels,
                                            int64_t n))
MASE_CUDA_FN(void, clipped_ste_backward, (float* dinp, const float* dout, const float* inp,
                                          int64_t n))
// gamma: one value on the device
MASE_CUDA_FN(void, binary_gamma_forward, (float* out, const float* inp, const float* gamma,
                                          int64_t n))
// dinp may be null; dgamma: one value on the device (written, not accumulated)
MASE_CUDA_FN(void, binary_gamma_backward, (float* dinp, float* dgamma, const float* dout,
                                           const float* inp, const float* gamma, int64_t n))

}  // namespace mase::cuda
