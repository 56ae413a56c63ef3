// quant/quantized_linear.h — QuantizedLinear: a Linear whose tensors are quantized and/or pruned.
//
// One wrapper does both jobs, and that is a choice: quantizing a pruned layer or pruning a
// quantized one must give one module that still owns the layer's `weight` and `bias` under
// those names (so state-dict keys — HF keys — do not change). Two wrappers could only compose
// by nesting, which would move the weight to `query.inner.weight`. So the masks live next to
// the quantizers, and the type name says what the layer does: "QuantizedLinear" when any
// quantizer is set, "PrunedLinear" when only masks are.
//
// It *is* an nn::Linear (a subclass built over the same tensors: no copy, no new init), so
// code looking for Linears — the prune pass, LoRA, graph tracing — finds it.
//
// Forward, for x (..., in), weight W (out, in), bias b (out):
//   x' = x ⊙ m_x          activation keep mask m_x, recomputed from x every call (prune.h)
//   W' = W ⊙ M            weight keep mask M, fixed (a u8 buffer "weight_mask")
//   y  = Q_out(Q_in(x') · Q_w(W')ᵀ + Q_b(b))          the math of quantized_linear()
// Masking before quantizing keeps pruned values out of block scales and row means; for the
// formats that do not map 0 to 0 (binary, binary_scaling, binary_residual: sign(0) = +1) the
// quantized tensor is masked again, so a pruned weight or activation is 0 for every format.
// ⊙ M is where(M, W, 0): the gradient of W is exactly 0 where M is 0.
//
// Why pruned weights stay zero through fine-tuning: the pass zeroes them in storage when it
// sets M, and they then get an exactly zero gradient. AdamW's decoupled decay multiplies
// them by (1 − lr·wd) (0 stays 0), and m = v = 0 give an update 0/(√0 + eps) = 0. Only an
// optimizer that already had momentum for them (built before pruning) could move them; so each
// forward with grad enabled also re-zeroes them in storage (one pass over W; a no-op in the
// normal case), and apply_weight_mask_() does it on demand (checkpoints call it).
//
// Parameters and buffers (besides weight, bias): data_in_mu, data_out_mu, weight_gamma
// (binary_residual's trainable μ/γ, when that format is used) and weight_mask (when pruned).
// Read next: quant/passes.h (the passes that build these), quant/mxint8_linear.h.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>

#include "models/layers.h"
#include "quant/prune.h"
#include "quant/quantize.h"

namespace mase::quant {

class QuantizedLinear : public nn::Linear {
 public:
  // Wraps base's weight and bias (the same tensors). `config` is a MASE-style per-layer
  // config (parse_linear_config; {"bypass": true} for none); `seed` seeds the stochastic
  // quantizers. `layer` names the layer in error messages.
  QuantizedLinear(const nn::Linear& base, const nlohmann::json& config, uint64_t seed = 0,
                  const std::string& layer = "linear");

  std::string type_name() const override;
  std::string extra_repr() const override;
  // Graph export (models/module_registry.h): Linear's sizes plus describe(); the tensors,
  // masks included, travel in model.safetensors. register_module_types() rebuilds it.
  nlohmann::json to_json() const override;
  // Graph metadata: weight and bias report their format, e.g. integer[8, 4] (width, fractional
  // width) or minifloat_ieee[8, 4] (width, exponent width); float[32] when not quantized.
  nn::Precision precision(const std::string& name) const override;
  Tensor forward(const Tensor& x) override;

  // ---- quantization -------------------------------------------------------------------------
  // Replace the quantizers (masks are kept). The config is validated first: on error nothing
  // changes.
  void set_quant_config(const nlohmann::json& config, uint64_t seed = 0,
                        const std::string& layer = "linear");
  const nlohmann::json& quant_config() const { return config_; }
  uint64_t quant_seed() const { return seed_; }
  const LinearQuantConfig& parsed_config() const { return parsed_; }
  bool is_quantized() const { return !parsed_.bypass; }
  LinearQuantizers& quantizers() { return q_; }

  // ---- pruning ------------------------------------------------------------------------------
  // keep: u8 (out, in), 1 = keep. Zeroes the pruned weights in storage.
  void set_weight_mask(const Tensor& keep);
  const Tensor& weight_mask() const { return weight_mask_; }  // undefined when not pruned
  void clear_weight_mask();   // forget the mask (bake: the zeros stay in the weight)
  void apply_weight_mask_();  // W ← W ⊙ M in place (no autograd)
  int64_t pruned_weights() const { return count_pruned(weight_mask_); }

  // Activation pruning on every forward; `gen` starts at (spec.seed, offset).
  void set_activation_pruning(const PruneSpec& spec, uint64_t offset = 0);
  void clear_activation_pruning() { act_.reset(); }
  const std::optional<PruneSpec>& activation_pruning() const { return act_; }
  const Generator& activation_generator() const { return act_gen_; }
  bool is_pruned() const { return weight_mask_.defined() || act_.has_value(); }

  // What this layer is, without its tensors (checkpoint sidecars, graph export):
  //   {"quant": <config>, "seed": s, "weight_mask": bool, "activation": <spec> or null,
  //    "activation_offset": n (only with a spec),
  //    "quant_offsets": [in, w, b, out] (the stochastic quantizers' streams, once any moved)}
  nlohmann::json describe() const;
  // A QuantizedLinear over base's tensors as described (masks all-ones: values come from the
  // checkpoint loaded next).
  static std::shared_ptr<QuantizedLinear> from_description(const nn::Linear& base,
                                                           const nlohmann::json& d,
                                                           const std::string& layer);

 private:
  void bind_quantizer_parameters();

  nlohmann::json config_;
  uint64_t seed_ = 0;
  LinearQuantConfig parsed_;
  LinearQuantizers q_;
  Tensor data_in_mu, data_out_mu, weight_gamma;  // registered parameter slots
  Tensor weight_mask_;                           // registered buffer slot "weight_mask"
  std::optional<PruneSpec> act_;
  Generator act_gen_;
};

}  // namespace mase::quant
