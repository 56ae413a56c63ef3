// models/module.h — the nn::Module base: named parameters, children, train/eval, state dicts.
//
// As in PyTorch, a model is a tree of modules. Each module registers its parameters (trainable
// tensors), buffers (non-trainable state such as pruning masks) and child modules under names;
// the dotted path from the root names every parameter exactly like a HuggingFace checkpoint key:
//   bert.encoder.layer.0.attention.self.query.weight
//
// Registration stores a pointer to the member that holds the child, so passes can *replace* a
// child in place (Linear -> QuantizedLinear, Dropout -> Identity) and the parent's forward,
// which calls the member, picks up the new module. That is why replaceable children are held
// as ModulePtr (std::shared_ptr<Module>) and called through the virtual unary forward.
//
// Read next: models/layers.h (Linear, Embedding, LayerNorm, Dropout, ...), models/bert.h.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"

namespace mase::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using NamedModules = std::vector<std::pair<std::string, ModulePtr>>;

// The number format a parameter is computed in, as graph metadata reports it (MASE's "type"
// and "precision"): {"float", {32}} for an f32 tensor; a quantized wrapper reports what its
// forward uses, e.g. {"fixed", {8, 4}} (width, fractional width). str(): "float[32]".
struct Precision {
  std::string type;
  std::vector<int64_t> widths;
  std::string str() const;
  bool operator==(const Precision&) const = default;
};
Precision dtype_precision(DType t);  // how a plain tensor stores numbers: f32 -> float[32]

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  Module(const Module&) = delete;             // modules live behind shared_ptr; the registry
  Module& operator=(const Module&) = delete;  // holds pointers into them, so never copy/move
  virtual ~Module() = default;

  // "Linear", "BertSelfAttention", ... (used in reports and graph metadata)
  virtual std::string type_name() const = 0;

  // Unary modules (Linear, LayerNorm, Dropout, activations, Embedding of ids) override this.
  // Calling goes through operator(), which lets an observer (graph/ tracing) see the call.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x);

  // A leaf is traced as one call_module node. Default: a module without children.
  virtual bool is_leaf() const { return children_.empty(); }
  // A one-line description of the configuration, e.g. "in=128, out=512, bias=true".
  virtual std::string extra_repr() const { return ""; }

  // ---- for graph/ (metadata, export) ------------------------------------------------------
  // Precision of parameter `name` (a key of named_parameters(false)). Default: from its dtype
  // (f32 -> float[32]). Quantized / pruned wrappers override it (the extension point).
  virtual Precision precision(const std::string& name) const;
  // The constructor arguments of a leaf module, e.g. {"in_features": 128, "out_features": 2,
  // "bias": true}, from which models/module_registry.h rebuilds it when an exported graph is
  // reloaded. Null (the default): this module cannot be rebuilt from a config.
  virtual nlohmann::json to_json() const { return nullptr; }

  // ---- the tree ---------------------------------------------------------------------------
  NamedTensors named_parameters(bool recurse = true) const;  // dotted paths, registration order
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  NamedModules named_children() const;
  NamedModules named_modules();  // this module as "", then every descendant by path
  ModulePtr submodule(const std::string& path);  // "encoder.layer.0"; ConfigError if absent
  // Put `m` where the child at `path` is (the member slot is updated). Throws ConfigError if
  // `m` is null, the path does not exist or the slot's declared type cannot hold `m`.
  void replace_submodule(const std::string& path, ModulePtr m);
  // Called on the parent after replace_submodule put a new child `name` in place (a module
  // whose fast path depends on its children's types resets it here: models/fusion.h).
  virtual void child_replaced(const std::string& name) { (void)name; }

  // ---- modes and state --------------------------------------------------------------------
  void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // zeroes existing .grad() in place (keeps the buffers: no allocation)
  int64_t num_parameters(bool trainable_only = false) const;
  // Move every parameter and buffer (and any gradient they hold) to `device`, in place, as
  // torch's module.to(device). The Tensor handles keep their identity: each TensorImpl gets
  // the copy's storage, strides and offset, so an optimizer, a state_dict or a user holding a
  // parameter sees it on the new device. Everything is copied first and swapped in after, so
  // a DeviceError (a build without CUDA, no GPU, out of memory) leaves the model untouched.
  // Tensors that shared one storage (views of each other) get separate storages.
  void to(Device device);

  // name -> tensor of every parameter and buffer (the tensors themselves, not copies)
  std::map<std::string, Tensor> state_dict() const;
  // Copy values in (parameters keep their identity, so optimizers stay valid). strict: every
  // key must match in name and shape; all problems are listed in one ConfigError.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  // Pretty tree with type names and extra_repr, PyTorch-style.
  std::string str() const;

 protected:
  // Register `value` as parameter `name` held in member `slot` (slot = value). Returns slot.
  Tensor& register_parameter(const std::string& name, Tensor& slot, Tensor value,
                             bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor& slot, Tensor value);
  // Register child `name` held in member `slot` (of any Module pointer type).
  template <class M>
  std::shared_ptr<M>& register_module(const std::string& name, std::shared_ptr<M>& slot,
                                      std::shared_ptr<M> value) {
    slot = std::move(value);
    std::shared_ptr<M>* p = &slot;
    children_.push_back({name,
                         [p] { return std::static_pointer_cast<Module>(*p); },
                         [p](ModulePtr m) {
                           auto typed = std::dynamic_pointer_cast<M>(m);
                           if (!typed) return false;
                           *p = typed;
                           return true;
                         }});
    return slot;
  }

 private:
  struct ChildSlot {
    std::string name;
    std::function<ModulePtr()> get;
    std::function<bool(ModulePtr)> set;  // false when the slot's type cannot hold it
  };
  struct TensorSlot {
    std::string name;
    Tensor* slot;
  };
  void collect(const std::string& prefix, bool params, bool recurse, NamedTensors& out) const;
  ModulePtr self(const char* op);  // shared_from_this(), or a ConfigError naming `op`
  void str_rec(std::string& out, const std::string& name, int indent) const;

  std::vector<TensorSlot> params_, buffers_;
  std::vector<ChildSlot> children_;
  bool training_ = true;
};

// Observer of module calls (graph/ tracing installs one): wraps each Module::operator().
struct ModuleObserver {
  virtual ~ModuleObserver() = default;
  virtual Tensor on_call(Module& m, const Tensor& x, const std::function<Tensor()>& run) = 0;
};
ModuleObserver* set_module_observer(ModuleObserver* observer);  // thread-local; returns previous
ModuleObserver* module_observer();  // this thread's observer, or nullptr

}  // namespace mase::nn
