// quant/quantize.cpp — the fake-quantization ops (quantize, residual_sign, binary_gamma) and
// Quantizer. Math and conventions: quantize.h; kernels: runtime/cpu/quant_{scalar,sign,block}.cpp
// and their CUDA twins cuda/quant_{scalar,sign,block}.cu (f32 on the GPU, the same bits).
#include "quant/quantize.h"

#include "autograd/ops.h"
#include "runtime/kernels/quant_block.h"
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/quant_scalar.h"
#include "runtime/kernels/quant_sign.h"

namespace mase::quant {
namespace {

void check_input(std::string_view op, const Tensor& x, std::string_view what = "input") {
  MASE_CHECK(x.defined(), Error, "[", op, "] ", what, " is an undefined tensor");
  MASE_CHECK(is_floating(x.dtype()), DTypeError, "[", op, "] expected ", what, " to be f32 or f64, got ",
             x.dtype());
  MASE_CHECK(x.is_cpu() || x.dtype() == DType::f32, DTypeError, "[", op, "] expected ", what,
             " to be f32 on ", x.device(), ", got ", x.dtype(), " (the CUDA kernels are f32 only)");
}

// A second tensor of an op (μ, γ) must live where the input does.
void check_same_device(std::string_view op, const Tensor& x, const Tensor& p, std::string_view what) {
  MASE_CHECK(p.device() == x.device(), DeviceError, "[", op, "] input on ", x.device(), " but ",
             what, " on ", p.device());
}

// rows × cols view of a tensor: cols = last dim (1 for a scalar), rows = the rest.
std::pair<int64_t, int64_t> rows_cols(const Tensor& x) {
  const int64_t cols = x.ndim() == 0 ? 1 : x.size(-1);
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

template <class T>
void forward(T* y, const T* x, int64_t rows, int64_t cols, const Format& f, uint64_t seed, uint64_t offset) {
  const int64_t n = rows * cols;
  switch (f.kind) {
    case Kind::binary: return cpu::binary_forward(y, x, n, f.bipolar, f.stochastic, seed, offset);
    case Kind::binary_scaling:
      return cpu::binary_scaling_forward(y, x, rows, cols, f.bipolar, f.stochastic, seed, offset);
    case Kind::ternary: return cpu::ternary_forward(y, x, rows, cols, f.scaling);
    case Kind::binary_residual: {
      std::vector<T> mu;
      for (double m : residual_levels_init(f.levels)) mu.push_back(static_cast<T>(m));
      return cpu::residual_sign_forward(y, x, mu.data(), f.levels, n);
    }
    case Kind::mxint8:
      if constexpr (std::is_same_v<T, float>) return cpu::mxint8_fake_quantize(y, x, rows, cols);
      return cpu::block_forward(y, x, rows, cols, f);
    default:
      if (is_scalar(f.kind)) return cpu::scalar_forward(y, x, n, f);
      return cpu::block_forward(y, x, rows, cols, f);
  }
}

// The same on the GPU: the CUDA twins (cuda/quant_*.cu, mxint8.cu) of the kernels above.
void forward_cuda(float* y, const float* x, int64_t rows, int64_t cols, const Format& f,
                  uint64_t seed, uint64_t offset) {
  const int64_t n = rows * cols;
  switch (f.kind) {
    case Kind::binary: return cuda::binary_forward(y, x, n, f.bipolar, f.stochastic, seed, offset);
    case Kind::binary_scaling:
      return cuda::binary_scaling_forward(y, x, rows, cols, f.bipolar, f.stochastic, seed, offset);
    case Kind::ternary: return cuda::ternary_forward(y, x, rows, cols, f.scaling);
    case Kind::binary_residual: return cuda::residual_sign_forward(y, x, nullptr, f.levels, n);
    case Kind::mxint8: return cuda::mxint8_fake_quantize(y, x, rows, cols);
    default:
      if (is_scalar(f.kind)) return cuda::scalar_forward(y, x, n, f);
      return cuda::block_forward(y, x, rows, cols, f);
  }
}

// dx = dy·[|x| ≤ 1] (x saved packed).
Tensor clipped_ste(const Tensor& dy, const Tensor& x) {
  Tensor dyc = dy.contiguous();
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    cuda::clipped_ste_backward(dx.data<float>(), dyc.data<float>(), x.data<float>(), x.numel());
    return dx;
  }
  dispatch_float(x.dtype(), "quantize", [&]<class T>() {
    cpu::clipped_ste_backward(dx.data<T>(), dyc.data<T>(), x.data<T>(), x.numel());
  });
  return dx;
}

}  // namespace

std::vector<double> residual_levels_init(int levels) {
  std::vector<double> mu;
  for (int l = 0; l < levels; ++l) mu.push_back(residual_level_init(levels, l));  // quant_elem.h
  return mu;
}

Tensor quantize(const Tensor& x, const Format& f, Generator& gen) {
  check_input("quantize", x);
  // MASE's minifloat and log formulas call log2/exp2, which CUDA rounds differently from the
  // C library in the last ulp: they would not give the CPU's bits (quant_scalar.h).
  MASE_CHECK(!(x.is_cuda() && f.mase_compat && f.kind != Kind::integer), DeviceError,
             "[quantize] \"compat\": \"mase\" ", f.str(), " runs on the CPU only (its log2 is the C "
             "library's), got a tensor on ", x.device(), " (drop compat, or move it to the CPU)");
  Tensor xc = x.detach().contiguous();  // the values (the op records its own history)
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  auto [rows, cols] = rows_cols(x);
  const bool random = f.stochastic && (f.kind == Kind::binary || f.kind == Kind::binary_scaling);
  const uint64_t offset = random ? gen.advance(x.numel()) : 0;
  if (x.numel() > 0 && x.is_cuda())
    forward_cuda(y.data<float>(), xc.data<float>(), rows, cols, f, gen.seed, offset);
  else if (x.numel() > 0)
    dispatch_float(x.dtype(), "quantize", [&]<class T>() {
      forward<T>(y.data<T>(), xc.data<T>(), rows, cols, f, gen.seed, offset);
    });
  const bool clipped = uses_clipped_ste(f.kind);
  Tensor saved = clipped ? xc.detach() : Tensor();
  return record("quantize", {x}, y, [saved](const Tensor& dy) -> Tensors {
    if (!saved.defined()) return {dy};  // dx = dy
    return {clipped_ste(dy, saved)};    // dx = dy·[|x| ≤ 1]
  }, {{"format", f.str()}});
}

Tensor residual_sign(const Tensor& x, const Tensor& mu) {
  check_input("residual_sign", x);
  check_input("residual_sign", mu, "mu");
  MASE_CHECK(mu.dtype() == x.dtype(), DTypeError, "[residual_sign] expected mu of dtype ", x.dtype(),
             " like the input, got ", mu.dtype());
  MASE_CHECK(mu.ndim() == 1 && mu.numel() >= 1, ShapeError,
             "[residual_sign] expected mu of shape (levels), got ", mu.shape());
  check_same_device("residual_sign", x, mu, "mu");
  const int L = static_cast<int>(mu.numel());
  Tensor xc = x.detach().contiguous(), mc = mu.detach().contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda())  // μ is read on the device: no copy to the host
    cuda::residual_sign_forward(y.data<float>(), xc.data<float>(), mc.data<float>(), L, x.numel());
  else
    dispatch_float(x.dtype(), "residual_sign", [&]<class T>() {
      cpu::residual_sign_forward(y.data<T>(), xc.data<T>(), mc.data<T>(), L, x.numel());
    });
  const bool gx = x.requires_grad();
  return record("residual_sign", {x, mu}, y, [xc, mc, L, gx](const Tensor& dy) -> Tensors {
    Tensor dyc = dy.contiguous();
    Tensor dx = gx ? Tensor::empty(xc.shape(), xc.dtype(), xc.device()) : Tensor();
    Tensor dmu = Tensor::empty(mc.shape(), mc.dtype(), mc.device());
    if (xc.is_cuda()) {
      cuda::residual_sign_backward(gx ? dx.data<float>() : nullptr, dmu.data<float>(),
                                   dyc.data<float>(), xc.data<float>(), mc.data<float>(), L,
                                   xc.numel());
      return {dx, dmu};
    }
    dispatch_float(xc.dtype(), "residual_sign", [&]<class T>() {
      // dx = dy·[|x| ≤ 1];  dμ_l = sign(μ_l)·Σ dy·s_l
      cpu::residual_sign_backward(gx ? dx.data<T>() : nullptr, dmu.data<T>(), dyc.data<T>(),
                                  xc.data<T>(), mc.data<T>(), L, xc.numel());
    });
    return {dx, dmu};
  }, {{"levels", int64_t(L)}});
}

namespace {

// binary_gamma on the GPU: γ stays in device memory (gamma.item() would stall the stream), so
// the kernels read it there and the backward writes dγ there.
Tensor binary_gamma_cuda(const Tensor& w, const Tensor& wc, const Tensor& gamma) {
  Tensor gc = gamma.detach().contiguous();
  Tensor y = Tensor::empty(w.shape(), w.dtype(), w.device());
  cuda::binary_gamma_forward(y.data<float>(), wc.data<float>(), gc.data<float>(), w.numel());
  const bool gw = w.requires_grad();
  return record("binary_gamma", {w, gamma}, y, [wc, gc, gw](const Tensor& dy) -> Tensors {
    Tensor dyc = dy.contiguous();
    Tensor dw = gw ? Tensor::empty(wc.shape(), wc.dtype(), wc.device()) : Tensor();
    Tensor dg = Tensor::empty(gc.shape(), gc.dtype(), gc.device());
    // dw = dy·|γ|·[|w| ≤ 1];  dγ = sign(γ)·Σ dy·sign(w)
    cuda::binary_gamma_backward(gw ? dw.data<float>() : nullptr, dg.data<float>(), dyc.data<float>(),
                                wc.data<float>(), gc.data<float>(), wc.numel());
    return {dw, dg};
  });
}

}  // namespace

Tensor binary_gamma(const Tensor& w, const Tensor& gamma) {
  check_input("binary_gamma", w);
  check_input("binary_gamma", gamma, "gamma");
  MASE_CHECK(gamma.dtype() == w.dtype(), DTypeError, "[binary_gamma] expected gamma of dtype ",
             w.dtype(), " like the weight, got ", gamma.dtype());
  MASE_CHECK(gamma.numel() == 1, ShapeError, "[binary_gamma] expected gamma with one element, got ",
             gamma.shape());
  check_same_device("binary_gamma", w, gamma, "gamma");
  Tensor wc = w.detach().contiguous();
  if (w.is_cuda()) return binary_gamma_cuda(w, wc, gamma);
  const double g = gamma.item();
  Tensor y = Tensor::empty(w.shape(), w.dtype());
  dispatch_float(w.dtype(), "binary_gamma", [&]<class T>() {
    cpu::binary_gamma_forward(y.data<T>(), wc.data<T>(), static_cast<T>(g), w.numel());
  });
  const bool gw = w.requires_grad();
  return record("binary_gamma", {w, gamma}, y, [wc, g, gw, gshape = gamma.shape()](const Tensor& dy) -> Tensors {
    Tensor dyc = dy.contiguous();
    Tensor dw = gw ? Tensor::empty(wc.shape(), wc.dtype()) : Tensor();
    double dg = 0;
    dispatch_float(wc.dtype(), "binary_gamma", [&]<class T>() {
      // dw = dy·|γ|·[|w| ≤ 1];  dγ = sign(γ)·Σ dy·sign(w)
      dg = cpu::binary_gamma_backward(gw ? dw.data<T>() : nullptr, dyc.data<T>(), wc.data<T>(),
                                      static_cast<T>(g), wc.numel());
    });
    return {dw, Tensor::full(gshape, dg, wc.dtype())};
  });
}

// ---- Quantizer ----------------------------------------------------------------------------

Quantizer::Quantizer(const Format& f, Role role, uint64_t seed, DType dtype, Device device)
    : format_(f), role_(role), gen_(seed) {
  f.validate();
  if (f.kind != Kind::binary_residual) return;
  if (role == Role::activation) {
    std::vector<double> init = residual_levels_init(f.levels);
    mu_ = Tensor::empty({int64_t(init.size())}, dtype);
    for (size_t l = 0; l < init.size(); ++l) {
      if (dtype == DType::f64) mu_.data<double>()[l] = init[l];
      else mu_.data<float>()[l] = static_cast<float>(init[l]);
    }
    mu_ = mu_.to(device);  // filled on the host, then moved: once, when the quantizer is made
    mu_.set_requires_grad(true);
  } else if (role == Role::weight) {
    gamma_ = Tensor::full({1}, 1.0, dtype, device);
    gamma_.set_requires_grad(true);
  }
}

Tensor Quantizer::operator()(const Tensor& x) {
  if (!format_) return x;
  if (format_->kind == Kind::binary_residual) {
    if (role_ == Role::activation) return residual_sign(x, mu_);
    if (role_ == Role::weight) return binary_gamma(x, gamma_);
    return x;  // bias: unquantized (MASE's LinearBinaryResidualSign)
  }
  return quantize(x, *format_, gen_);
}

std::vector<std::pair<std::string, Tensor>> Quantizer::parameters() const {
  std::vector<std::pair<std::string, Tensor>> p;
  if (mu_.defined()) p.emplace_back("mu", mu_);
  if (gamma_.defined()) p.emplace_back("gamma", gamma_);
  return p;
}

std::string Quantizer::str() const { return format_ ? format_->str() : "none"; }

// ---- the four quantizers of a Linear -----------------------------------------------------

LinearQuantizers make_linear_quantizers(const LinearQuantConfig& c, uint64_t seed, DType dtype,
                                        Device device) {
  LinearQuantizers q;
  if (c.bypass) return q;
  q.data_in = Quantizer(c.data_in, Role::activation, seed, dtype, device);
  q.weight = Quantizer(c.weight, Role::weight, seed + 1, dtype, device);
  q.bias = Quantizer(c.bias, Role::bias, seed + 2, dtype, device);
  if (c.data_out) q.data_out = Quantizer(*c.data_out, Role::activation, seed + 3, dtype, device);
  return q;
}

std::vector<std::pair<std::string, Tensor>> LinearQuantizers::parameters() const {
  std::vector<std::pair<std::string, Tensor>> p;
  for (auto [name, qz] : {std::pair<const char*, const Quantizer*>{"data_in", &data_in}, {"weight", &weight},
                          {"bias", &bias}, {"data_out", &data_out}})
    for (auto& [pname, t] : qz->parameters()) p.emplace_back(cat(name, ".", pname), t);
  return p;
}

Tensor quantized_linear(LinearQuantizers& q, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Tensor y = linear(q.data_in(x), q.weight(weight), bias.defined() ? q.bias(bias) : Tensor());
  return q.data_out(y);
}

}  // namespace mase::quant
