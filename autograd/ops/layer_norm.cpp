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
// dropout_add_layer_norm: BERT's "Add & Norm" after a dense layer, in one op —
//   h = dropout(x + x_bias, p) + residual,   y = layer_norm(h)·weight + bias
// x is the dense layer's GEMM output without its bias (x_bias), so the bias broadcast, the
// dropout, the residual add and the normalisation are one pass over the rows instead of four
// (bias copy, dropout, add, layer_norm), and the backward is one pass instead of four (layer
// norm backward, add's fan-out, dropout backward, Σ for the bias). Backward, with dh the
// layer-norm gradient above taken at h and m the dropout multipliers (0 or 1/(1 − p)):
//   dresidual = dh,   dx = dh·m,   dx_bias = Σ_rows dx
// The mask is drawn as dropout() draws it — word i of (gen.seed, gen.advance(numel)) for
// element i — so the fused op and dropout_add_layer_norm_reference (the composition of
// add, dropout, add, layer_norm) draw the same mask from the same generator state. Unlike
// dropout(), it is drawn once and saved as a byte an element for the backward (cheaper than
// regenerating it there: runtime/cpu/layer_norm.cpp).
//
// Reference: Ba et al., "Layer Normalization", arXiv:1607.06450; llm.c's layernorm_backward.
// Kernels: runtime/cpu/layer_norm.cpp, cuda/layer_norm.cu.
// Tests: tests/autograd/test_layer_norm.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/dropout.h"
#include "runtime/kernels/layer_norm.h"

namespace mase {

namespace {

// The checks of layer_norm and dropout_add_layer_norm; returns C, the normalised size.
int64_t check_layer_norm_args(const char* op, const Tensor& x, const Tensor& weight,
                              const Tensor& bias, double eps) {
  ops::check_float(op, x);
  ops::check_cuda_f32(op, x);
  ops::check_defined(op, weight, "weight");
  ops::check_defined(op, bias, "bias");
  ops::check_same(op, x, weight);
  ops::check_same(op, x, bias);
  MASE_CHECK(x.ndim() >= 1, ShapeError, "[", op, "] expected x with at least 1 dim, got shape ",
             x.shape());
  const int64_t C = x.size(-1);
  MASE_CHECK(weight.shape() == Shape{C} && bias.shape() == Shape{C}, ShapeError,
             "[", op, "] expected weight and bias of shape (", C, "), got ", weight.shape(),
             " and ", bias.shape(), " (they must match the last dim of x ", x.shape(), ")");
  MASE_CHECK(eps >= 0, ConfigError, "[", op, "] expected eps >= 0, got ", eps);
  return C;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t C = check_layer_norm_args("layer_norm", x, weight, bias, eps);
  const int64_t rows = C == 0 ? 0 : x.numel() / C;

  // x (..., C) is read as (rows, C); mean and rstd are (rows)
  Tensor xc = ops::packed(x), wc = ops::packed(weight), bc = ops::packed(bias);
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
    Tensor dy = ops::packed(dout);
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

Tensor dropout_add_layer_norm(const Tensor& x, const Tensor& x_bias, const Tensor& residual,
                              const Tensor& weight, const Tensor& bias, double p, bool training,
                              double eps, Generator& gen, const RowMap& row_map) {
  const char* op = "dropout_add_layer_norm";
  const int64_t C = check_layer_norm_args(op, x, weight, bias, eps);
  ops::check_defined(op, residual, "residual");
  ops::check_same(op, x, residual);
  MASE_CHECK(residual.shape() == x.shape(), ShapeError, "[", op, "] expected residual of shape ",
             x.shape(), " (like x), got ", residual.shape());
  if (x_bias.defined()) {
    ops::check_same(op, x, x_bias);
    MASE_CHECK(x_bias.shape() == Shape{C}, ShapeError, "[", op, "] expected x_bias of shape (", C,
               "), got ", x_bias.shape());
  }
  MASE_CHECK(p >= 0.0 && p <= 1.0, ConfigError, "[", op, "] expected a drop probability p in ",
             "[0, 1], got ", p);
  const int64_t rows = C == 0 ? 0 : x.numel() / C;

  DropoutMask mask;  // as dropout() draws it (autograd/ops/dropout.cpp)
  if (training && p > 0.0) {
    MASE_CHECK(row_map.identity() || rows % row_map.period == 0, ConfigError, "[", op,
               "] expected a row map whose period divides the ", rows, " rows, got period ",
               row_map.period);
    mask.on = true;
    mask.seed = gen.seed;
    mask.offset = gen.advance(row_map.logical_rows(rows) * C);  // = numel without a map
    mask.rows = row_map;
    if (x.is_cuda()) mask.offset_base = gen.device_offset_base;  // CUDA graphs (runtime/random.h)
    mask.threshold = dropout_threshold(p);
    mask.scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  }
  Tensor xc = ops::packed(x), rc = ops::packed(residual), wc = ops::packed(weight);
  Tensor bc = ops::packed(bias), xbc = x_bias.defined() ? ops::packed(x_bias) : Tensor();
  const bool has_xb = x_bias.defined();
  Tensors inputs{x};
  if (has_xb) inputs.push_back(x_bias);
  for (const Tensor& t : {residual, weight, bias}) inputs.push_back(t);
  // saved for the backward: the input of the normalisation. Under inference on the CPU nothing
  // reads it, and the kernel keeps each row in a scratch row instead (a (rows, C) write less)
  const bool keep_h = x.is_cuda() || any_requires_grad(inputs);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor h = keep_h ? Tensor::empty(x.shape(), x.dtype(), x.device()) : Tensor();
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor keep = mask.on ? Tensor::empty(x.shape(), DType::u8, x.device()) : Tensor();
  uint8_t* kp = mask.on ? keep.data<uint8_t>() : nullptr;
  if (x.is_cuda()) {
    cuda::dropout_add_layer_norm_forward(
        y.data<float>(), h.data<float>(), kp, mean.data<float>(), rstd.data<float>(),
        xc.data<float>(), xbc.defined() ? xbc.data<float>() : nullptr, rc.data<float>(),
        wc.data<float>(), bc.data<float>(), rows, C, eps, mask);
  } else {
    dispatch_float(x.dtype(), op, [&]<class T>() {
      cpu::dropout_add_layer_norm_forward<T>(
          y.data<T>(), keep_h ? h.data<T>() : nullptr, kp, mean.data<T>(), rstd.data<T>(),
          xc.data<T>(), xbc.defined() ? xbc.data<T>() : nullptr, rc.data<T>(), wc.data<T>(),
          bc.data<T>(), rows, C, eps, mask);
    });
  }

  Attrs attrs{{"p", p}, {"training", training}, {"eps", eps}};
  if (mask.on) {
    attrs.push_back({"seed", static_cast<int64_t>(mask.seed)});
    attrs.push_back({"offset", static_cast<int64_t>(mask.offset)});
  }
  return record(op, inputs, y, [h, keep, wc, mean, rstd, rows, C, scale = mask.scale,
                                has_xb](const Tensor& dout) -> Tensors {
    // dh = layer-norm backward at h;  dresidual = dh;  dx = dh * keep * scale;  dx_bias = sum_rows(dx)
    Tensor dy = ops::packed(dout);
    auto empty = [&](const Shape& s) { return Tensor::empty(s, h.dtype(), h.device()); };
    Tensor dres = empty(h.shape()), dw = empty({C}), db = empty({C});
    const bool dropped = keep.defined();
    Tensor dx = dropped ? empty(h.shape()) : dres;  // no dropout: dx is dresidual itself
    Tensor dxb = has_xb ? empty({C}) : Tensor();
    const uint8_t* kp = dropped ? keep.data<uint8_t>() : nullptr;
    if (h.is_cuda()) {
      cuda::dropout_add_layer_norm_backward(
          dropped ? dx.data<float>() : nullptr, dres.data<float>(),
          has_xb ? dxb.data<float>() : nullptr, dw.data<float>(), db.data<float>(),
          dy.data<float>(), h.data<float>(), kp, scale, wc.data<float>(), mean.data<float>(),
          rstd.data<float>(), rows, C);
    } else {
      dispatch_float(h.dtype(), "dropout_add_layer_norm", [&]<class T>() {
        cpu::dropout_add_layer_norm_backward<T>(
            dropped ? dx.data<T>() : nullptr, dres.data<T>(), has_xb ? dxb.data<T>() : nullptr,
            dw.data<T>(), db.data<T>(), dy.data<T>(), h.data<T>(), kp, scale, wc.data<T>(),
            mean.data<T>(), rstd.data<T>(), rows, C);
      });
    }
    Tensors grads{dx};
    if (has_xb) grads.push_back(dxb);
    for (const Tensor& g : {dres, dw, db}) grads.push_back(g);
    return grads;
  }, std::move(attrs));
}

Tensor dropout_add_layer_norm_reference(const Tensor& x, const Tensor& x_bias,
                                        const Tensor& residual, const Tensor& weight,
                                        const Tensor& bias, double p, bool training, double eps,
                                        Generator& gen) {
  Tensor v = x_bias.defined() ? x + x_bias : x;
  return layer_norm(dropout(v, p, training, gen) + residual, weight, bias, eps);
}

// The same maths from primitive ops (mean, sub, mul, sqrt, div, add).
Tensor layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  Tensor d = x - mean(x, {-1}, /*keepdim=*/true);
  Tensor var = mean(d * d, {-1}, true);
  return d / sqrt(var + eps) * weight + bias;
}

}  // namespace mase
