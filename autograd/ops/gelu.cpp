// autograd/ops/gelu.cpp — GELU, the exact (erf) form that BERT uses, and fused bias + GELU.
//
//   y  = x·Φ(x) = ½·x·(1 + erf(x/√2))            Φ = standard normal CDF
//   dx = dy·(Φ(x) + x·φ(x))                        φ(x) = exp(−x²/2)/√(2π), since Φ' = φ
//
// (Not the tanh approximation of GPT-2; HF's "gelu" for BERT is this exact one.)
// Reference: Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415.
//
// bias_gelu(x, b) = gelu(x + b), b (C) broadcast over the rows of x (..., C): BERT's
// intermediate layer gelu(x·W1ᵀ + b1) computed as a GEMM without bias, then this one pass.
//   dx = dy·gelu'(x + b)        db = Σ_rows dx
// The composition (bias_gelu_reference: add, then gelu) makes four passes over the (rows, C)
// activation forward — bias broadcast, add, gelu; and two more backward — gelu', Σ for db;
// the fused op makes one each way, and saves x only (x + b is recomputed in the backward).
// bias_gelu_in_row_chunks: the same pass between two row products, a chunk of rows at a time,
// for inference — the intermediate never leaves the cache (BERT's FFN with integer Linears).
// Kernels: runtime/cpu/gelu.cpp, cuda/gelu.cu. Tests: tests/autograd/test_gelu.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/gelu.h"

#include <algorithm>
#include <vector>

#include "runtime/parallel.h"

namespace mase {

Tensor gelu(const Tensor& x) {
  ops::check_float("gelu", x);
  ops::check_cuda_f32("gelu", x);
  Tensor xc = ops::packed(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    cuda::gelu_forward(y.data<float>(), xc.data<float>(), x.numel());
  } else {
    dispatch_float(x.dtype(), "gelu", [&]<class T>() {
      cpu::gelu_forward<T>(y.data<T>(), xc.data<T>(), x.numel());
    });
  }

  return record("gelu", {x}, y, [xc](const Tensor& dout) -> Tensors {
    // dx = dy * (Phi(x) + x * phi(x))
    Tensor dy = ops::packed(dout);
    Tensor dx = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
    if (dx.is_cuda()) {
      cuda::gelu_backward(dx.data<float>(), dy.data<float>(), xc.data<float>(), dx.numel());
    } else {
      dispatch_float(dx.dtype(), "gelu", [&]<class T>() {
        cpu::gelu_backward<T>(dx.data<T>(), dy.data<T>(), xc.data<T>(), dx.numel());
      });
    }
    return {dx};
  });
}

namespace {
// dx (may be dy itself), x, dy packed (rows, C), bias (C): writes dx, returns db.
Tensor bias_gelu_backward_kernel(const Tensor& dx, const Tensor& dy, const Tensor& xc,
                                 const Tensor& bc, int64_t rows, int64_t C) {
  Tensor db = Tensor::empty({C}, xc.dtype(), xc.device());
  if (dx.is_cuda()) {
    cuda::bias_gelu_backward(dx.data<float>(), db.data<float>(), dy.data<float>(),
                             xc.data<float>(), bc.data<float>(), rows, C);
  } else {
    dispatch_float(dx.dtype(), "bias_gelu", [&]<class T>() {
      cpu::bias_gelu_backward<T>(dx.data<T>(), db.data<T>(), dy.data<T>(), xc.data<T>(),
                                 bc.data<T>(), rows, C);
    });
  }
  return db;
}
}  // namespace

Tensor bias_gelu(const Tensor& x, const Tensor& bias) {
  ops::check_float("bias_gelu", x);
  ops::check_cuda_f32("bias_gelu", x);
  ops::check_defined("bias_gelu", bias, "bias");
  ops::check_same("bias_gelu", x, bias);
  MASE_CHECK(x.ndim() >= 1 && bias.ndim() == 1 && bias.size(0) == x.size(-1), ShapeError,
             "[bias_gelu] expected bias (C) for x (..., C), got x ", x.shape(), " and bias ",
             bias.shape());
  // x (..., C) is read as (rows, C)
  const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
  Tensor xc = ops::packed(x), bc = ops::packed(bias);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    cuda::bias_gelu_forward(y.data<float>(), xc.data<float>(), bc.data<float>(), rows, C);
  } else {
    dispatch_float(x.dtype(), "bias_gelu", [&]<class T>() {
      cpu::bias_gelu_forward<T>(y.data<T>(), xc.data<T>(), bc.data<T>(), rows, C);
    });
  }

  return record("bias_gelu", {x, bias}, y, [xc, bc, rows, C](const Tensor& dout) -> Tensors {
    // dx = dy * gelu'(x + b),  db = sum_rows(dx)
    Tensor dx = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
    Tensor db = bias_gelu_backward_kernel(dx, ops::packed(dout), xc, bc, rows, C);
    return {dx, db};
  });
}

Tensor bias_gelu_backward_(const Tensor& dy, const Tensor& x, const Tensor& bias) {
  MASE_CHECK(dy.shape() == x.shape() && dy.dtype() == x.dtype() && dy.device() == x.device() &&
                 dy.is_contiguous() && dy.offset() == 0,
             ShapeError, "[bias_gelu_backward_] expected dy packed, of x's shape ", x.shape(),
             ", dtype and device, got ", dy.shape(), " (it is overwritten: pass a gradient you own)");
  // the kernel reads C values of bias: check it as bias_gelu does
  ops::check_float("bias_gelu_backward_", x);
  ops::check_cuda_f32("bias_gelu_backward_", x);
  ops::check_defined("bias_gelu_backward_", bias, "bias");
  ops::check_same("bias_gelu_backward_", x, bias);
  MASE_CHECK(x.ndim() >= 1 && bias.ndim() == 1 && bias.size(0) == x.size(-1), ShapeError,
             "[bias_gelu_backward_] expected bias (C) for x (..., C), got x ", x.shape(),
             " and bias ", bias.shape());
  const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
  return bias_gelu_backward_kernel(dy, dy, ops::packed(x), ops::packed(bias), rows, C);
}

Tensor bias_gelu_reference(const Tensor& x, const Tensor& bias) { return gelu(x + bias); }

Tensor bias_gelu_in_row_chunks(const Tensor& x, const RowProduct& p1, const Tensor& bias,
                               const RowProduct& p2, int64_t out_features) {
  MASE_CHECK(x.is_cpu() && x.dtype() == DType::f32 && x.ndim() >= 1, DTypeError,
             "[bias_gelu_in_row_chunks] expected an f32 CPU tensor (..., C), got ", x.dtype(),
             " on ", x.device(), " of shape ", x.shape());
  ops::check_defined("bias_gelu_in_row_chunks", bias, "bias");
  // neither x nor bias would get a gradient (a bias parameter included)
  MASE_CHECK(!grad_enabled() || (!x.requires_grad() && !bias.requires_grad()), AutogradError,
             "[bias_gelu_in_row_chunks] computes without autograd: call it under NoGradGuard");
  MASE_CHECK(bias.ndim() == 1 && bias.dtype() == DType::f32 && bias.is_cpu() && out_features >= 0,
             ShapeError, "[bias_gelu_in_row_chunks] expected an f32 CPU bias (I) and out ≥ 0, got ",
             bias.shape(), " and ", out_features);
  const Tensor xc = ops::packed(x), bc = ops::packed(bias);
  const int64_t C = x.size(-1), I = bias.numel(), M = C ? x.numel() / C : 0;
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  Tensor y = Tensor::empty(out_shape);
  if (M == 0) return y;
  // Rows per chunk: the chunk's two (rows, I) buffers — the product and its GELU — in ~256 KB
  // of the core's L2, at least 16 rows so the GEMM tiles stay full, at most 256.
  const int64_t chunk = std::clamp<int64_t>((128 * 1024) / (4 * std::max<int64_t>(I, 1)), 16, 256);
  const float* xp = xc.data<float>();
  const float* bp = bc.data<float>();
  float* yp = y.data<float>();
  parallel_for(0, (M + chunk - 1) / chunk, 1, [&](int64_t c0, int64_t c1) {
    SerialRegion serial;  // the products and GELU below run on this thread only
    thread_local std::vector<float> h, g;
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t r0 = c * chunk, rows = std::min(chunk, M - r0);
      h.resize(size_t(rows * I));
      g.resize(size_t(rows * I));
      p1(xp + r0 * C, rows, h.data());                           // (rows, I)
      cpu::bias_gelu_forward<float>(g.data(), h.data(), bp, rows, I);  // gelu(· + bias)
      p2(g.data(), rows, yp + r0 * out_features);                // (rows, out)
    }
  });
  return y;
}

}  // namespace mase
