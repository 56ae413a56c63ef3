// models/layers.h — the leaf modules BERT is built from, each a thin shell around one op:
//   Linear (linear), Embedding (embedding), LayerNorm (layer_norm), Dropout (dropout),
//   GELU / Tanh / ReLU (activations), Identity, and ModuleList (a container).
// Parameters are public members named as in PyTorch (weight, bias), so HF keys fall out.
#pragma once
#include "models/module.h"

namespace mase::nn {

class Linear : public Module {
 public:
  // weight (out, in) Kaiming-uniform(a=√5) and bias U(±1/√in), as torch.nn.Linear.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  // A Linear over existing tensors — the same handles, no copy and no random init (so the
  // default generator is not advanced). weight (out, in), bias (out) or undefined; each keeps
  // its requires_grad (a frozen weight stays frozen). Wrappers (quant/, LoRA) and passes (fuse_lora)
  // build on this.
  Linear(Tensor weight, Tensor bias);
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  nlohmann::json to_json() const override;
  Tensor forward(const Tensor& x) override;  // x (..., in) -> (..., out)
  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);  // weight ~ N(0, 1) as PyTorch
  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override;
  nlohmann::json to_json() const override;
  Tensor forward(const Tensor& ids) override;  // ids (...) i32 -> (..., dim)
  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-12);  // weight 1, bias 0
  std::string type_name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;
  nlohmann::json to_json() const override;
  Tensor forward(const Tensor& x) override;
  int64_t dim;
  double eps;
  Tensor weight, bias;
};

// Active only in training mode; draws its mask from the process generator (runtime/random.h),
// so a run is reproducible from its seed and a checkpoint restores the stream.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.1);
  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override;
  nlohmann::json to_json() const override;
  Tensor forward(const Tensor& x) override;
  double p;
};

class GELU : public Module {
 public:
  std::string type_name() const override { return "GELU"; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  Tensor forward(const Tensor& x) override { return gelu(x); }
};

class Tanh : public Module {
 public:
  std::string type_name() const override { return "Tanh"; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

class ReLU : public Module {
 public:
  std::string type_name() const override { return "ReLU"; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  Tensor forward(const Tensor& x) override { return relu(x); }
};

// y = x. Stands in for a removed module (dropout removal, "Linear or Identity" in NAS).
class Identity : public Module {
 public:
  std::string type_name() const override { return "Identity"; }
  nlohmann::json to_json() const override { return nlohmann::json::object(); }
  Tensor forward(const Tensor& x) override;
};

// Children named "0", "1", ... as torch.nn.ModuleList (so keys read encoder.layer.3.…).
class ModuleList : public Module {
 public:
  std::string type_name() const override { return "ModuleList"; }
  void push_back(ModulePtr m);
  size_t size() const { return items_.size(); }
  // The current child i as an M; ConfigError when there is none or it is another type (a
  // pass replaced it, e.g. a BertLayer by an Identity).
  template <class M>
  M& at(size_t i) const {
    MASE_CHECK(i < items_.size(), ConfigError, "[ModuleList] expected an index < ", items_.size(),
               ", got ", i);
    M* m = dynamic_cast<M*>(items_[i]->get());
    MASE_CHECK(m, ConfigError, "[ModuleList] expected child ", i, " of the type asked for, got ",
               *items_[i] ? "a " + (*items_[i])->type_name() : std::string("none"),
               " (was it replaced by a pass?)");
    return *m;
  }
  bool is_leaf() const override { return false; }

 private:
  std::vector<std::unique_ptr<ModulePtr>> items_;  // stable addresses for the slots
};

}  // namespace mase::nn
