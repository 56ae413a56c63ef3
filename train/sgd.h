// train/sgd.h — stochastic gradient descent with momentum, exactly as torch.optim.SGD.
// For each parameter p with gradient g:
//   g ← g + wd·p                          L2 weight decay (coupled: it goes through momentum)
//   b ← g                                 on the parameter's first step (no dampening), then
//   b ← μ·b + (1 − dampening)·g           momentum_buffer                    (if μ ≠ 0)
//   g ← g + μ·b  (nesterov)  or  g ← b     the direction
//   p ← p − lr·g
// SGD is built from tensor ops: it is rarely the bottleneck in this project (AdamW is the
// fine-tuning optimizer) and this way it reads like the formula. Read next: train/adamw.h.
#pragma once
#include "train/optimizer.h"

namespace mase::train {

struct SGDOptions {
  double lr = 1e-3;          // default for groups that do not set their own
  double momentum = 0.0;     // μ >= 0; 0 = plain SGD (no state buffer)
  double dampening = 0.0;    // >= 0
  double weight_decay = 0.0; // default for groups that do not set their own
  bool nesterov = false;     // needs momentum > 0 and dampening == 0 (as PyTorch)
};

class SGD : public Optimizer {
 public:
  // Explicit groups; unset lr / weight_decay come from `options`. ConfigError on bad values.
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
  // One group with every parameter (classic SGD decays everything; build groups with
  // decay_groups() for another policy).
  explicit SGD(const NamedTensors& params, SGDOptions options = {});

  void step() override;
  const SGDOptions& options() const { return options_; }

 protected:
  std::vector<std::string> buffer_names() const override;

 private:
  SGDOptions options_;
};

}  // namespace mase::train
