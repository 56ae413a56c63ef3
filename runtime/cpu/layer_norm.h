// runtime/cpu/layer_norm.h — layer normalisation over the last dim (twin: cuda/layer_norm.h).
//
// inp/out/dout/dinp are packed (rows, cols); weight, bias, dweight, dbias are (cols);
// mean and rstd are (rows): saved by the forward so the backward does not recompute them.
#pragma once
#include <cstdint>

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

}  // namespace mase::cpu
