// runtime/kernels/layer_norm.h — layer normalisation over the last dim, plain and fused with the
// "Add" of a transformer's Add & Norm.
//
// inp/out/dout/dinp/hidden/residual are packed (rows, cols); weight, bias, inp_bias and their
// gradients are (cols); mean and rstd are (rows): saved by the forward so the backward does
// not recompute them.
//
// The contract of the layer_norm kernels: both backends' signatures side by side, implemented by
// runtime/cpu/layer_norm.cpp (mase::cpu, templates over float and double) and cuda/layer_norm.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/kernels/dropout.h"  // DropoutMask

namespace mase::cpu {

// mean = Σ x / C, var = Σ (x − mean)² / C (biased), rstd = 1/√(var + eps),
// out = (x − mean)·rstd·weight + bias.
template <class T>
void layer_norm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias,
                        int64_t rows, int64_t cols, double eps);

// With x̂ = (x − mean)·rstd and g = dout·weight:
//   dinp = rstd·(g − mean_c(g) − x̂·mean_c(g·x̂)),  dweight = Σ_rows dout·x̂,  dbias = Σ_rows dout.
// dweight and dbias are overwritten (not accumulated into).
template <class T>
void layer_norm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                         const T* weight, const T* mean, const T* rstd, int64_t rows,
                         int64_t cols);

// BERT's Add & Norm with the dense layer's bias and the dropout folded in, one pass per row:
//   hidden = dropout(inp + inp_bias) + residual,   out = layer_norm(hidden)
// inp_bias may be null (no bias); `mask` says which elements of inp + inp_bias are kept
// (scaled by mask.scale), and when it is on, keep (rows·cols bytes) receives 1 for a kept
// element and 0 for a dropped one, for the backward. hidden is written: it is what the
// backward normalises again. On the CPU it may be null when no backward will run (inference):
// each row's sum is then kept in a scratch row only.
template <class T>
void dropout_add_layer_norm_forward(T* out, T* hidden, uint8_t* keep, T* mean, T* rstd,
                                    const T* inp, const T* inp_bias, const T* residual,
                                    const T* weight, const T* bias, int64_t rows, int64_t cols,
                                    double eps, const DropoutMask& mask);

// dresidual = layer_norm_backward's dinp at hidden;  dinp = dresidual·keep·scale (both null
// when there was no dropout: then dinp = dresidual, and the caller uses that);
// dinp_bias = Σ_rows dinp (null: not wanted);  dweight, dbias as layer_norm_backward. Sums are
// overwritten.
template <class T>
void dropout_add_layer_norm_backward(T* dinp, T* dresidual, T* dinp_bias, T* dweight, T* dbias,
                                     const T* dout, const T* hidden, const uint8_t* keep,
                                     double scale, const T* weight, const T* mean, const T* rstd,
                                     int64_t rows, int64_t cols);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/layer_norm.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, layer_norm_forward, (float* out, float* mean, float* rstd, const float* inp,
                                        const float* weight, const float* bias, int64_t rows,
                                        int64_t cols, double eps))
MASE_CUDA_FN(void, layer_norm_backward, (float* dinp, float* dweight, float* dbias,
                                         const float* dout, const float* inp, const float* weight,
                                         const float* mean, const float* rstd, int64_t rows,
                                         int64_t cols))

MASE_CUDA_FN(void, dropout_add_layer_norm_forward,
             (float* out, float* hidden, uint8_t* keep, float* mean, float* rstd,
              const float* inp, const float* inp_bias, const float* residual,
              const float* weight, const float* bias, int64_t rows, int64_t cols, double eps,
              const DropoutMask& mask))
MASE_CUDA_FN(void, dropout_add_layer_norm_backward,
             (float* dinp, float* dresidual, float* dinp_bias, float* dweight, float* dbias,
              const float* dout, const float* hidden, const uint8_t* keep, double scale,
              const float* weight, const float* mean, const float* rstd, int64_t rows,
              int64_t cols))

}  // namespace mase::cuda
