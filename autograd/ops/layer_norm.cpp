// autograd/ops/layer_norm.cpp — layer normalisation over the last dim (BERT's LayerNorm).
//
// Per row x of C values (biased variance, as PyTorch):
//   mean = Σ x / C,   var = Σ (x − mean)² / C,   rstd = 1/√(var + eps)
//   x̂ = (x − mean)·rstd,   y = x̂·weight + bias
// Backward, with g = dy·weight (the gradient reaching x̂) and means taken over the row:
//   dx      = rstd·(g − mean(g) − x̂·mean(g·x̂))
//   dweight = Σ_rows dy·x̂,    dbias = Σ_rows dy
// Derivation: x̂ depends on x through the row's mean and rstd; ∂x̂_j/∂x_i =
// rstd·(δ_ij − 1/C − x̂_i·x̂_j/C), and Σ_j g_j·∂x̂_j/∂x_i is the line above.
// The forward saves mean and rstd per row, so the backward never recomputes them.
//
// Reference: Ba et al., "Layer Normalization", arXiv:1607.06450; llm.c's layernorm_backward.
// Kernels: runtime/cpu/layer_norm.cpp, cuda/layer_norm.cu.
// Tests: tests/autograd/test_layer_norm.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "cuda/layer_norm.h"
#include "runtime/cpu/layer_norm.h"

namespace mase {

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  ops::check_float("layer_norm", x);
  ops::check_cuda_f32("layer_norm", x);
  ops::check_defined("layer_norm", weight, "weight");
  ops::check_defined("layer_norm", bias, "bias");
  ops::check_same("layer_norm", x, weight);
  ops::check_same("layer_norm", x, bias);
  MASE_CHECK(x.ndim() >= 1, ShapeError, "[layer_norm] expected x with at least 1 dim, got shape ",
             x.shape());
  const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
  MASE_CHECK(weight.shape() == Shape{C} && bias.shape() == Shape{C}, ShapeError,
             "[layer_norm] expected weight and bias of shape (", C, "), got ", weight.shape(),
             " and ", bias.shape(), " (they must match the last dim of x ", x.shape(), ")");
  MASE_CHECK(eps >= 0, ConfigError, "[layer_norm] expected eps >= 0, got ", eps);

  // x (..., C) is read as (rows, C); mean and rstd are (rows)
  Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
  if (x.is_cuda()) {
    cuda::layer_norm_forward(y.data<float>(), mean.data<float>(), rstd.data<float>(),
                             xc.data<float>(), wc.data<float>(), bc.data<float>(), rows, C, eps);
  } else {
    dispatch_float(x.dtype(), "layer_norm", [&]<class T>() {
      cpu::layer_norm_forward<T>(y.data<T>(), mean.data<T>(), rstd.data<T>(), xc.data<T>(),
                                 wc.data<T>(), bc.data<T>(), rows, C, eps);
    });
  }

  return record("layer_norm", {x, weight, bias}, y,
                [xc, wc, mean, rstd, rows, C](const Tensor& dout) -> Tensors {
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w;  dw = Σ dy * xhat;  db = Σ dy
    Tensor dy = dout.contiguous();
    Tensor dx = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
    Tensor dw = Tensor::empty({C}, xc.dtype(), xc.device());
    Tensor db = Tensor::empty({C}, xc.dtype(), xc.device());
    if (dx.is_cuda()) {
      cuda::layer_norm_backward(dx.data<float>(), dw.data<float>(), db.data<float>(),
                                dy.data<float>(), xc.data<float>(), wc.data<float>(),
                                mean.data<float>(), rstd.data<float>(), rows, C);
    } else {
      dispatch_float(dx.dtype(), "layer_norm", [&]<class T>() {
        cpu::layer_norm_backward<T>(dx.data<T>(), dw.data<T>(), db.data<T>(), dy.data<T>(),
                                    xc.data<T>(), wc.data<T>(), mean.data<T>(), rstd.data<T>(),
                                    rows, C);
      });
    }
    return {dx, dw, db};
  }, {{"eps", eps}});
}

// The same maths from primitive ops (mean, sub, mul, sqrt, div, add).
Tensor layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  Tensor d = x - mean(x, {-1}, /*keepdim=*/true);
  Tensor var = mean(d * d, {-1}, true);
  return d / sqrt(var + eps) * weight + bias;
}

}  // namespace mase
