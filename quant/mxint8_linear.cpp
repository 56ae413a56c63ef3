// quant/mxint8_linear.cpp — MxInt8Linear, the model bytes report and the mxint8_weights pass
// (see mxint8_linear.h).
#include "quant/mxint8_linear.h"

#include <cstdio>
#include <regex>

#include "models/parameters.h"
#include "runtime/kernels/mxint8.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "quant/report_table.h"

namespace mase::quant {

MxInt8Linear::MxInt8Linear(const nn::Linear& base)
    : in_features(base.in_features), out_features(base.out_features) {
  MASE_CHECK(base.weight.dtype() == DType::f32, DTypeError,
             "[MxInt8Linear] expected an f32 weight, got ", base.weight.dtype());
  MxInt8Tensor p = mxint8_pack(base.weight.detach());
  register_buffer("weight_elements", weight_elements, p.elements);
  register_buffer("weight_scales", weight_scales, p.scales);
  register_parameter("bias", bias, base.bias, base.bias.defined() && base.bias.requires_grad());
  train(base.is_training());
}

MxInt8Linear::MxInt8Linear(int64_t in, int64_t out, bool with_bias)
    : in_features(in), out_features(out) {
  MASE_CHECK(in > 0 && out > 0, ConfigError, "[MxInt8Linear] expected positive sizes, got in=", in,
             ", out=", out);
  register_buffer("weight_elements", weight_elements, Tensor::zeros({out, in}, DType::i8));
  register_buffer("weight_scales", weight_scales,
                  Tensor::zeros({out, cpu::mx_blocks(in)}, DType::u8));
  register_parameter("bias", bias, with_bias ? Tensor::zeros({out}) : Tensor());
}

std::string MxInt8Linear::extra_repr() const {
  return cat("in_features=", in_features, ", out_features=", out_features,
             ", bias=", bias.defined() ? "true" : "false", ", weight=mxint8 packed");
}

Tensor MxInt8Linear::forward(const Tensor& x) {
  // on a GPU the weight stays packed: the GEMM decodes it tile by tile (quant/mxint8.h)
  if (x.is_cuda()) return mxint8_linear(x, packed(), bias);
  // the only fp32 weight is this temporary: (out, in), freed when forward returns
  Tensor w = mxint8_unpack(packed());
  return linear(x, w, bias);
}

// ---- bytes -------------------------------------------------------------------------------

namespace {

using nn::with_commas;  // 1234567 -> "1,234,567" (models/parameters.h)

// Which class of the report a tensor of module `m` belongs to.
std::string tensor_class(const nn::Module& m, const std::string& name) {
  if (dynamic_cast<const nn::Embedding*>(&m)) return "embeddings";
  if (dynamic_cast<const nn::LayerNorm*>(&m)) return "LayerNorm";
  if (dynamic_cast<const nn::Linear*>(&m) || dynamic_cast<const MxInt8Linear*>(&m)) {
    if (name == "weight") return "Linear weights left fp32";
    if (name == "bias") return "Linear biases";
    return "masks and quantizer parameters";
  }
  return "other";
}

}  // namespace

ModelBytes model_bytes(nn::Module& model) {
  ModelBytes r;
  std::vector<std::pair<std::string, int64_t>>& un = r.unquantized;
  auto add_unquantized = [&](const std::string& cls, int64_t bytes) {
    for (auto& [c, b] : un)
      if (c == cls) {
        b += bytes;
        return;
      }
    un.push_back({cls, bytes});
  };
  for (auto& [path, m] : model.named_modules()) {
    if (auto* mx = dynamic_cast<MxInt8Linear*>(m.get())) {
      r.packed.add(mx->weight_elements.shape());
      if (mx->bias.defined())
        add_unquantized("Linear biases", static_cast<int64_t>(mx->bias.nbytes()));
      continue;
    }
    nn::NamedTensors own = m->named_parameters(false), bufs = m->named_buffers(false);
    own.insert(own.end(), bufs.begin(), bufs.end());
    for (auto& [name, t] : own)
      add_unquantized(tensor_class(*m, name), static_cast<int64_t>(t.nbytes()));
  }
  int64_t rest = 0;
  for (auto& [c, b] : un) rest += b;
  r.model_fp32_bytes = rest + r.packed.fp32_bytes();
  r.model_bytes = rest + r.packed.packed_bytes();
  return r;
}

std::string ModelBytes::str() const {
  std::string s = packed.str();
  int64_t rest = 0;
  s += "  left as they were:";
  for (auto& [c, b] : unquantized) {
    s += cat(" ", c, " ", with_commas(b), " B,");
    rest += b;
  }
  if (!unquantized.empty()) s.pop_back();
  s += cat(" (", with_commas(rest), " B)\n");
  char buf[512];
  const double share =
      model_fp32_bytes ? double(packed.fp32_bytes()) / double(model_fp32_bytes) : 0;
  std::snprintf(buf, sizeof buf,
                "Whole model: %s B -> %s B, %.2f%% saved: the packed weights were %.1f%% of the "
                "model's fp32 bytes, and %.1f%% x %.2f%% = %.2f%%; the rest saves nothing\n",
                with_commas(model_fp32_bytes).c_str(), with_commas(model_bytes).c_str(),
                100.0 * saving(), 100.0 * share, 100.0 * share, 100.0 * packed.saving(),
                100.0 * share * packed.saving());
  return s + buf;
}

std::string MxInt8Report::str() const {
  std::string s = cat("MXINT8 weights: ", layers.size(), " Linear layer(s) packed");
  if (!skipped.empty()) {
    s += cat(", ", skipped.size(), " skipped (quantized or activation-pruned: left as they are):");
    for (size_t i = 0; i < skipped.size(); ++i) s += (i ? ", " : " ") + skipped[i];
  }
  s += "\n";
  if (layers.empty()) return s;
  ReportTable t({"layer", "weight", "fp32 B", "packed B"});
  for (const MxInt8Row& r : layers)
    t.add_row(
        {r.layer, to_string(r.weight), with_commas(r.fp32_bytes), with_commas(r.packed_bytes)});
  return s + t.str() + bytes.str();
}

MxInt8Report mxint8_weights(nn::Module& model, const std::string& regex) {
  std::regex re;
  try {
    re = std::regex(regex);
  } catch (const std::regex_error& e) {
    throw ConfigError(cat("[mxint8_weights] invalid regex '", regex, "': ", e.what()));
  }
  MxInt8Report report;
  for (auto& [path, lin] : linear_layers(model)) {
    if (!std::regex_search(path, re)) continue;
    if (auto* q = dynamic_cast<QuantizedLinear*>(lin)) {
      if (q->is_quantized() || q->activation_pruning()) {
        report.skipped.push_back(path);
        continue;
      }
      q->apply_weight_mask_();  // the zeros go into the packed weight
    }
    auto packed = std::make_shared<MxInt8Linear>(*lin);
    BytesReport one;
    one.add(lin->weight.shape());
    report.layers.push_back({path, lin->weight.shape(), one.fp32_bytes(), one.packed_bytes()});
    model.replace_submodule(path, packed);
  }
  report.bytes = model_bytes(model);
  return report;
}

}  // namespace mase::quant
