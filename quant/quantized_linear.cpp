// quant/quantized_linear.cpp — QuantizedLinear (see quantized_linear.h for the math and why
// pruned weights stay zero).
#include "quant/quantized_linear.h"

#include <cstdio>

#include "quant/integer_linear.h"

namespace mase::quant {
namespace {

// Q(0) == 0 for every format except the sign family without a zero: binary and
// binary_scaling (sign(0) = +1) and binary_residual (Σ|μ_l|·sign(r_l) of 0 is μ1 − μ2 + …),
// and log with "compat": "mase" (MASE's log has no zero: 0 maps to 2^−bias).
bool maps_zero_to_zero(const Quantizer& q) {
  if (q.is_identity()) return true;
  const Kind k = q.format()->kind;
  if (k == Kind::log && q.format()->mase_compat) return false;
  return k != Kind::binary && k != Kind::binary_scaling && k != Kind::binary_residual;
}

// The parameter `name` of a quantizer ("mu", "gamma"), or an undefined tensor.
Tensor quantizer_param(const Quantizer& q, const char* name) {
  for (auto& [n, t] : q.parameters())
    if (n == name) return t;
  return Tensor();
}

}  // namespace

QuantizedLinear::QuantizedLinear(const nn::Linear& base, const nlohmann::json& config,
                                 uint64_t seed, const std::string& layer)
    : nn::Linear(base.weight, base.bias) {
  register_parameter("data_in_mu", data_in_mu, Tensor());
  register_parameter("data_out_mu", data_out_mu, Tensor());
  register_parameter("weight_gamma", weight_gamma, Tensor());
  register_buffer("weight_mask", weight_mask_, Tensor());
  set_quant_config(config, seed, layer);
  train(base.is_training());
}

void QuantizedLinear::set_quant_config(const nlohmann::json& config, uint64_t seed,
                                       const std::string& layer) {
  LinearQuantConfig parsed = parse_linear_config(config, layer);  // throws before any change
  q_ = make_linear_quantizers(parsed, seed, weight.dtype(), weight.device());  // μ, γ beside W
  parsed_ = parsed;
  config_ = config;
  seed_ = seed;
  bind_quantizer_parameters();
}

void QuantizedLinear::bind_quantizer_parameters() {
  // the module's slots hold the quantizers' own tensors (same handles), so optimizers given
  // named_parameters() train them and load_state_dict() writes into them
  data_in_mu = quantizer_param(q_.data_in, "mu");
  data_out_mu = quantizer_param(q_.data_out, "mu");
  weight_gamma = quantizer_param(q_.weight, "gamma");
}

nlohmann::json QuantizedLinear::to_json() const {
  nlohmann::json j = nn::Linear::to_json();  // in_features, out_features, bias
  j.update(describe());
  return j;
}

nn::Precision QuantizedLinear::precision(const std::string& name) const {
  const Format* f = nullptr;
  if (is_quantized() && name == "weight") f = &parsed_.weight;
  if (is_quantized() && name == "bias") f = &parsed_.bias;
  if (f == nullptr) return nn::Linear::precision(name);
  const std::string s = f->str();  // "integer(width=8, frac_width=4)"
  std::vector<int64_t> widths{f->width};
  if (f->kind == Kind::integer) widths.push_back(f->frac_width);
  else if (f->exponent_width > 0) widths.push_back(f->exponent_width);
  return {s.substr(0, s.find('(')), widths};
}

std::string QuantizedLinear::type_name() const {
  if (!is_quantized() && is_pruned()) return "PrunedLinear";
  return "QuantizedLinear";
}

std::string QuantizedLinear::extra_repr() const {
  std::string s = nn::Linear::extra_repr();
  if (!is_quantized()) {
    if (!is_pruned()) s += ", bypass";
  } else {
    s +=
        cat(", data_in=", q_.data_in.str(), ", weight=", q_.weight.str(), ", bias=", q_.bias.str());
    if (!q_.data_out.is_identity()) s += cat(", data_out=", q_.data_out.str());
  }
  if (weight_mask_.defined()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", double(pruned_weights()) / double(weight.numel()));
    s += cat(", weight_sparsity=", buf);
  }
  if (act_) s += cat(", activation_pruning=", act_->str());
  return s;
}

Tensor QuantizedLinear::forward(const Tensor& x) {
  // x is (..., in), weight (out, in)
  Tensor zero = Tensor::zeros({}, x.dtype(), x.device());
  Tensor xin = x, keep_x;
  if (act_ && act_->sparsity > 0) {
    keep_x = activation_keep_mask(x, *act_, act_gen_);
    xin = where(keep_x, x, zero);  // dx = dy where kept
  }
  Tensor w = weight;
  if (weight_mask_.defined()) {
    if (grad_enabled() && weight.requires_grad()) apply_weight_mask_();
    w = where(weight_mask_, weight, Tensor::zeros({}, weight.dtype(), weight.device()));
  }
  // Inference on int8-coded formats computes in integers: the same values up to the order of
  // fp32 additions (quant/integer_linear.h). Not while autograd or a graph tracer watches.
  if (!grad_enabled() && op_observer() == nullptr && integer_kernels() &&
      integer_path_supported(parsed_) && xin.is_cpu() && xin.dtype() == DType::f32 &&
      w.is_cpu() && w.dtype() == DType::f32) {
    const Int8Weight packed(w, parsed_.weight, parsed_.data_in);
    Tensor y = integer_linear(xin, parsed_.data_in, packed, bias.defined() ? q_.bias(bias) : Tensor());
    return q_.data_out(y);
  }
  Tensor xq = q_.data_in(xin);
  if (keep_x.defined() && !maps_zero_to_zero(q_.data_in)) xq = where(keep_x, xq, zero);
  Tensor wq = q_.weight(w);
  if (weight_mask_.defined() && !maps_zero_to_zero(q_.weight))
    wq = where(weight_mask_, wq, Tensor::zeros({}, wq.dtype(), wq.device()));
  Tensor y = linear(xq, wq, bias.defined() ? q_.bias(bias) : Tensor());
  return q_.data_out(y);
}

void QuantizedLinear::set_weight_mask(const Tensor& keep) {
  MASE_CHECK(keep.defined() && keep.dtype() == DType::u8, DTypeError,
             "[QuantizedLinear] expected a u8 weight mask, got ",
             keep.defined() ? name(keep.dtype()) : "an undefined tensor");
  MASE_CHECK(keep.shape() == weight.shape(), ShapeError,
             "[QuantizedLinear] expected a weight mask of shape ", weight.shape(), ", got ",
             keep.shape());
  MASE_CHECK(keep.device() == weight.device(), DeviceError, "[QuantizedLinear] weight on ",
             weight.device(), " but mask on ", keep.device());
  weight_mask_ = keep.contiguous().clone();  // owned: the caller may reuse its tensor
  apply_weight_mask_();
}

void QuantizedLinear::clear_weight_mask() { weight_mask_ = Tensor(); }

void QuantizedLinear::apply_weight_mask_() {
  if (!weight_mask_.defined()) return;
  NoGradGuard no_grad;
  Tensor masked = where(weight_mask_, weight, Tensor::zeros({}, weight.dtype(), weight.device()));
  copy_(weight, masked);
}

void QuantizedLinear::set_activation_pruning(const PruneSpec& spec, uint64_t offset) {
  act_ = spec;
  act_gen_ = Generator(spec.seed);
  act_gen_.offset = offset;
}

nlohmann::json QuantizedLinear::describe() const {
  nlohmann::json d = {{"quant", config_},
                      {"seed", seed_},
                      {"weight_mask", weight_mask_.defined()},
                      {"activation", nullptr}};
  if (act_) {
    d["activation"] = act_->to_json();
    d["activation_offset"] = act_gen_.offset;
  }
  // the stochastic quantizers' stream positions (data_in, weight, bias, data_out), when any
  // has moved: without them a reloaded binary/binary_scaling stochastic layer would redraw
  // the values the saved one had already used
  const uint64_t offsets[4] = {q_.data_in.generator().offset, q_.weight.generator().offset,
                               q_.bias.generator().offset, q_.data_out.generator().offset};
  if (offsets[0] || offsets[1] || offsets[2] || offsets[3])
    d["quant_offsets"] = {offsets[0], offsets[1], offsets[2], offsets[3]};
  return d;
}

std::shared_ptr<QuantizedLinear> QuantizedLinear::from_description(const nn::Linear& base,
                                                                   const nlohmann::json& d,
                                                                   const std::string& layer) {
  auto fail = [&](const std::string& what) {
    return ConfigError(cat("[QuantizedLinear] layer '", layer, "': ", what, " in ", d.dump()));
  };
  if (!d.is_object() || !d.contains("quant")) throw fail("expected an object with \"quant\"");
  uint64_t seed = 0;
  if (d.contains("seed")) {
    if (!d["seed"].is_number_integer() || d["seed"].get<int64_t>() < 0)
      throw fail("expected \"seed\" to be a non-negative integer");
    seed = d["seed"].get<uint64_t>();
  }
  if (d.contains("weight_mask") && !d["weight_mask"].is_boolean())
    throw fail("expected \"weight_mask\" to be true or false");
  auto m = std::make_shared<QuantizedLinear>(base, d["quant"], seed, layer);
  if (d.contains("quant_offsets")) {
    const auto& o = d["quant_offsets"];
    if (!o.is_array() || o.size() != 4)
      throw fail("expected \"quant_offsets\" to be 4 non-negative integers");
    for (const auto& v : o)
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw fail("expected \"quant_offsets\" to be 4 non-negative integers");
    LinearQuantizers& q = m->quantizers();
    q.data_in.set_generator_offset(o[0].get<uint64_t>());
    q.weight.set_generator_offset(o[1].get<uint64_t>());
    q.bias.set_generator_offset(o[2].get<uint64_t>());
    q.data_out.set_generator_offset(o[3].get<uint64_t>());
  }
  if (d.value("weight_mask", false))
    m->set_weight_mask(Tensor::ones(base.weight.shape(), DType::u8, base.weight.device()));
  if (d.contains("activation") && !d["activation"].is_null()) {
    uint64_t offset = 0;
    if (d.contains("activation_offset")) {
      if (!d["activation_offset"].is_number_integer() || d["activation_offset"].get<int64_t>() < 0)
        throw fail("expected \"activation_offset\" to be a non-negative integer");
      offset = d["activation_offset"].get<uint64_t>();
    }
    m->set_activation_pruning(parse_prune_spec(d["activation"], layer), offset);
  }
  return m;
}

}  // namespace mase::quant
