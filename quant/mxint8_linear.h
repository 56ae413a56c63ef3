// quant/mxint8_linear.h — a Linear whose weight is stored as MXINT8 only, and the pass and
// bytes report that go with it (Lab 4.3: "a model whose Linear weights are stored as MXINT8").
//
// MxInt8Linear keeps the weight packed (quant/mxint8.h): int8 elements (out, in) and one E8M0
// scale byte per block of 32 along `in`, the dimension the matmul reduces over. There is no
// lasting fp32 copy of the weight:
//   y = x · dequant(Wq)ᵀ + b        x (..., in), Wq (out, in) packed, b (out) fp32
// On the CPU forward dequantizes Wq into a temporary, uses it, and drops it, so y equals a
// Linear with the fake-quantized weight quantize(W, mxint8) exactly (same dequantized values,
// same GEMM). Trading compute for memory: every forward pays one dequantization, K + K/32
// bytes read and 4K written per row (mase-quant --speed measures it). On a GPU the GEMM
// decodes Wq tile by tile (mxint8_linear, quant/mxint8.h): equal within rounding.
// The packed weight is a buffer (not trainable); x and the bias still get gradients.
//
// Keys: "weight_elements" (i8) and "weight_scales" (u8) replace "weight"; "bias" is kept.
//
// Why the model does not shrink by 74.2%: only the packed tensors save (32 − 8.25)/32; the
// rest of the model — embeddings (in bert-tiny most of the parameters), LayerNorms, biases,
// unquantized layers — stays fp32, and at run time activations, workspaces and the allocator's
// caches are not weights at all. ModelBytes reports the first part, tensor by tensor class.
// Read next: quant/checkpoint.h (saving all of this).
#pragma once
#include <string>
#include <vector>

#include "models/layers.h"
#include "quant/mxint8.h"

namespace mase::quant {

class MxInt8Linear : public nn::Module {
 public:
  explicit MxInt8Linear(const nn::Linear& base);  // packs base.weight, shares base.bias
  MxInt8Linear(int64_t in_features, int64_t out_features, bool bias);  // zeros (to load into)

  std::string type_name() const override { return "MxInt8Linear"; }
  nlohmann::json to_json() const override {  // graph export: enough to rebuild it empty
    return {{"in_features", in_features}, {"out_features", out_features}, {"bias", bias.defined()}};
  }
  std::string extra_repr() const override;
  Tensor forward(const Tensor& x) override;  // x (..., in) -> (..., out)

  MxInt8Tensor packed() const { return {weight_elements, weight_scales}; }
  Tensor dequantized_weight() const { return mxint8_unpack(packed()); }  // f32 (out, in)

  int64_t in_features, out_features;
  Tensor weight_elements;  // i8 (out, in)
  Tensor weight_scales;    // u8 (out, ceil(in/32))
  Tensor bias;             // f32 (out) or undefined
};

// The bytes of a model's parameters and buffers, split into what MXINT8 packs and the rest.
struct ModelBytes {
  BytesReport packed;            // the MXINT8 weights: their fp32 size vs packed size
  int64_t model_fp32_bytes = 0;  // the whole model before (every tensor at 4 B/element)
  int64_t model_bytes = 0;       // the whole model as stored now
  // the tensors left as they were, by class: {"embeddings", bytes}, {"Linear biases", ...}
  std::vector<std::pair<std::string, int64_t>> unquantized;
  double saving() const {
    return model_fp32_bytes ? 1.0 - double(model_bytes) / double(model_fp32_bytes) : 0.0;
  }
  std::string str() const;  // the arithmetic, one line per part
};

// The bytes of `model` as it is now (MxInt8Linear layers counted as packed, with their fp32
// size for comparison).
ModelBytes model_bytes(nn::Module& model);

struct MxInt8Row {
  std::string layer;
  Shape weight;  // (out, in)
  int64_t fp32_bytes, packed_bytes;
};
struct MxInt8Report {
  std::vector<MxInt8Row> layers;
  std::vector<std::string> skipped;  // matched, but quantized: left as they were
  ModelBytes bytes;                  // after the pass
  std::string str() const;
};

// Replace every Linear whose dotted path matches `regex` (std::regex_search; "" = every
// Linear) by an MxInt8Linear packing its (masked) weight. A pruned-only layer is packed with
// its zeros; a QuantizedLinear with quantizers or activation pruning is skipped and listed in
// the report (packing would drop its formats).
[[nodiscard]] MxInt8Report mxint8_weights(nn::Module& model, const std::string& regex = "");

}  // namespace mase::quant
