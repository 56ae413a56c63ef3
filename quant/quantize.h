// quant/quantize.h — fake quantization as autograd ops, and the Quantizer object.
//
//   Tensor y = quantize(x, make_format("integer", {{"width", 8}, {"frac_width", 4}}));
//   backward(sum(y));   // x.grad() == 1 everywhere: the straight-through estimator
//
// Fake quantization stores the quantized values in x's float dtype (f32, or f64 for gradient
// checks); x's shape is kept and every block or row statistic runs along the last dim.
// Backward (formats.md): straight-through, dx = dy, for every format except the sign family
// (binary, binary_scaling, binary_residual, ternary), whose backward is the clipped STE
// dx = dy·[|x| ≤ 1] (outside ±1 the sign no longer responds to x, so neither does the gradient).
//
// binary_residual has trainable parameters. As an activation quantizer it expands x into L
// residual signs, out = Σ_l |μ_l|·sign(r_l) (μ init (L, L−1, …, 1)/Σ); as a weight quantizer it
// is |γ|·sign(w) (γ init 1). A Quantizer owns μ or γ as tensors with requires_grad, so an
// optimizer given quantizer.parameters() trains them. Bias under binary_residual is left
// unquantized, as in MASE's LinearBinaryResidualSign.
//
// QuantizedLinear (quant/quantized_linear.h) holds a LinearQuantizers (four Quantizers built
// from parse_linear_config) and computes quantized_linear() below. Read next: quant/mxint8.h.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "quant/format.h"
#include "runtime/random.h"

namespace mase::quant {

// y = Q(x) with the format's STE. Stochastic formats draw from `gen` (advancing it).
// binary_residual here is the activation form with the initial μ (constant, no gradient).
// CPU tensors in f32 or f64, CUDA tensors in f32 (the same bits as the CPU: quant_elem.h).
// "compat": "mase" minifloat/log formats are CPU-only (a DeviceError on CUDA).
Tensor quantize(const Tensor& x, const Format& f, Generator& gen = default_generator());

// out = Σ_l |μ_l|·sign(r_l), r_1 = x, r_{l+1} = r_l − |μ_l|·sign(r_l).  mu is (L).
// dx = dy·[|x| ≤ 1];  dμ_l = sign(μ_l)·Σ dy·sign(r_l)  (exact: the signs are locally constant)
Tensor residual_sign(const Tensor& x, const Tensor& mu);

// out = |γ|·sign(w) (+1 where w ≥ 0).  gamma has one element.
// dw = dy·|γ|·[|w| ≤ 1];  dγ = sign(γ)·Σ dy·sign(w)
Tensor binary_gamma(const Tensor& w, const Tensor& gamma);

// The initial residual levels (L, L−1, …, 1)/Σ, e.g. L = 2: (2/3, 1/3).
std::vector<double> residual_levels_init(int levels);

// Which tensor of a layer a quantizer is for; only binary_residual behaves differently.
enum class Role { activation, weight, bias };

class Quantizer {
 public:
  Quantizer() = default;  // no format: the identity
  // seed: the Philox stream of the stochastic formats (each call advances it, so a run is
  // reproducible from the seed). dtype, device: of the trainable parameters (f64 for
  // gradcheck; the device of the tensors it will quantize).
  Quantizer(const Format& f, Role role, uint64_t seed = 0, DType dtype = DType::f32,
            Device device = Device::cpu());

  Tensor operator()(const Tensor& x);

  bool is_identity() const { return !format_.has_value(); }
  const std::optional<Format>& format() const { return format_; }
  Role role() const { return role_; }
  // Trainable tensors by name: {"mu"} or {"gamma"} for binary_residual, else none.
  std::vector<std::pair<std::string, Tensor>> parameters() const;
  std::string str() const;  // "integer(width=8, frac_width=4)" or "none"
  // The stochastic formats' stream: where it has got to (checkpoints save and restore it, so a
  // reloaded model draws what the saved one would have drawn next).
  const Generator& generator() const { return gen_; }
  void set_generator_offset(uint64_t offset) { gen_.offset = offset; }

 private:
  std::optional<Format> format_;
  Role role_ = Role::activation;
  Tensor mu_, gamma_;
  Generator gen_;
};

// The four quantizers of one Linear, from parse_linear_config; all identity when bypassed.
// Each stochastic quantizer gets its own Philox stream (seed, seed+1, seed+2, seed+3).
struct LinearQuantizers {
  Quantizer data_in, weight, bias, data_out;
  // Trainable quantizer tensors by name: "data_in.mu", "weight.gamma" (binary_residual only).
  std::vector<std::pair<std::string, Tensor>> parameters() const;
};
LinearQuantizers make_linear_quantizers(const LinearQuantConfig& config, uint64_t seed = 0,
                                        DType dtype = DType::f32, Device device = Device::cpu());

// y = Q_out(Q_in(x) · Q_w(W)ᵀ + Q_b(b)), in fp32 (formats.md, "Quantized Linear wrapper").
// x (..., in), weight (out, in), bias (out) or undefined. QuantizedLinear's forward computes
// this, with its masks, and under no-grad on the CPU by the integer path (integer_linear.h).
Tensor quantized_linear(LinearQuantizers& q, const Tensor& x, const Tensor& weight,
                        const Tensor& bias = Tensor());

}  // namespace mase::quant
