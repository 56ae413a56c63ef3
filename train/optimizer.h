// train/optimizer.h — the Optimizer base: parameter groups, zero_grad, learning rate, state.
//
// An optimizer holds the model's parameters (by their dotted HF paths) in groups, each with
// its own learning rate and weight decay, and updates them in step() from their .grad(). As in
// PyTorch:
//  * a parameter is skipped by step() when it is frozen (requires_grad false) or has no
//    gradient (undefined .grad(): zero_grad() sets them to none by default, so a parameter that
//    backward did not reach this step is not touched — no decay, no momentum);
//  * per-parameter state is created on the parameter's first step: AdamW's exp_avg and
//    exp_avg_sq, SGD's momentum_buffer, and a step count per parameter (a parameter skipped
//    in some steps has its own, smaller t in AdamW's bias correction).
// state_dict() names that state "<parameter path>.<buffer>" — e.g.
// "bert.encoder.layer.0.attention.self.query.weight.exp_avg" and "....weight.step" — so a
// checkpoint stores it next to the model's tensors and load_state_dict() restores it.
//
// Parameter groups are chosen by name. BERT fine-tuning (HF Trainer) excludes biases and
// LayerNorm weights from weight decay; is_no_decay() below is that rule, and every function
// that builds groups takes the predicate as an argument, so a model with other names (RMSNorm,
// "ln_f") or another policy (every 1-d tensor) passes its own.
//
// Read next: train/adamw.h (the fused update), train/sgd.h, train/lr_schedule.h,
// train/clip_grad_norm.h.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/module.h"

namespace mase::train {

using nn::NamedTensors;

// One group of parameters sharing a learning rate and a weight decay. Unset values take the
// optimizer's defaults (its options' lr / weight_decay), as in torch.optim.
struct ParamGroup {
  NamedTensors params;                 // (path, parameter) in the model's order
  std::optional<double> lr;            // resolved by the optimizer's constructor
  std::optional<double> weight_decay;  // resolved by the optimizer's constructor
};

// Decides from a parameter's path (and the tensor, for rules such as "every 1-d tensor")
// whether it is excluded from weight decay.
using NoDecayFn = std::function<bool(const std::string& path, const Tensor& param)>;

// The default rule (HF Trainer for BERT): no weight decay for
//   * biases: paths ending in "bias" (…dense.bias, …LayerNorm.bias);
//   * LayerNorm weights: paths containing "LayerNorm" or "layer_norm" (HF BERT, other HF
//     models), or whose last two components are "norm.weight" (e.g. "encoder.norm.weight").
bool is_no_decay(const std::string& path, const Tensor& param = Tensor());

// Split `params` into [decay group (weight_decay), no-decay group (0)] by `no_decay`; both
// keep the model's order, and an empty group is left out. A null `no_decay` puts every
// parameter in the decay group. lr is left unset (the optimizer's default).
std::vector<ParamGroup> decay_groups(const NamedTensors& params, double weight_decay,
                                     const NoDecayFn& no_decay = is_no_decay);

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;  // owns state keyed to its parameters: never copied
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // Update every trainable parameter that has a gradient, from that gradient. No autograd.
  virtual void step() = 0;
  // Forget the gradients: set them to none (PyTorch's default; the next backward allocates
  // them again from the caching allocator), or fill them with 0 when !set_to_none (keeps the
  // buffers, but then step() updates every parameter, including those backward missed).
  void zero_grad(bool set_to_none = true);

  // Learning rate. set_lr sets every group's lr; set_lr_factor sets each group's lr to its
  // initial lr (the one it had at construction) times `factor` — what a schedule does
  // (torch LambdaLR): opt.set_lr_factor(schedule.factor(step)). ConfigError if negative.
  void set_lr(double lr);
  void set_lr_factor(double factor);
  double lr(size_t group = 0) const;

  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const std::string& name() const { return name_; }  // "AdamW", "SGD" (error messages)
  // Steps taken by the parameter at `path` (0 before its first step or if unknown).
  int64_t step_count(const std::string& path) const;

  // The state as "<path>.<buffer>" → tensor (the buffers themselves, not copies) and
  // "<path>.step" → a scalar f64 tensor holding the parameter's step count.
  std::map<std::string, Tensor> state_dict() const;
  // Replace the whole state by `state` (copies the values to each parameter's device and
  // dtype). Every key must name a parameter of this optimizer and one of its buffers, with the
  // parameter's shape, and a parameter with any state needs all of it; every problem is listed
  // in one ConfigError, and on error the current state is left as it was.
  void load_state_dict(const std::map<std::string, Tensor>& state);

 protected:
  // Resolves unset group values to the defaults and checks everything (ConfigError /
  // DTypeError): non-empty, defined floating tensors, no path or tensor twice, lr ≥ 0 and
  // weight_decay ≥ 0.
  Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr,
            double default_weight_decay);

  // The buffers each parameter's state has, e.g. {"exp_avg", "exp_avg_sq"}.
  virtual std::vector<std::string> buffer_names() const = 0;

  // The state of one parameter: its buffers by name and its step count.
  struct ParamState {
    std::map<std::string, Tensor> buffers;
    int64_t step = 0;
  };
  ParamState& state(const std::string& path) { return state_[path]; }
  // The gradient step() should use for `p` at `path`, or an undefined tensor when p is to be
  // skipped (frozen, or no gradient). Checks the gradient's shape, dtype and device against p
  // and returns it packed.
  Tensor grad_for_step(const std::string& path, const Tensor& p) const;

  std::string name_;
  std::vector<ParamGroup> groups_;
  std::vector<double> initial_lrs_;  // each group's lr at construction (for set_lr_factor)

 private:
  std::map<std::string, ParamState> state_;  // by parameter path
};

// "[AdamW] expected lr >= 0, got -1" unless lo <= value (and value is not NaN). Shared by the
// optimizers' option checks.
void check_at_least(const std::string& op, const char* what, double value, double lo);

}  // namespace mase::train
