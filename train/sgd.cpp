// train/sgd.cpp — SGD's step from tensor ops (math in sgd.h, after PyTorch's
// torch/optim/sgd.py _single_tensor_sgd).
#include "train/sgd.h"

namespace mase::train {
namespace {

SGDOptions checked(SGDOptions o) {
  check_at_least("SGD", "momentum", o.momentum, 0.0);
  check_at_least("SGD", "dampening", o.dampening, 0.0);
  MASE_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ConfigError,
             "[SGD] expected momentum > 0 and dampening == 0 for nesterov, got momentum ",
             o.momentum, " and dampening ", o.dampening);
  return o;
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer("SGD", std::move(groups), options.lr, options.weight_decay),
      options_(checked(options)) {}

SGD::SGD(const NamedTensors& params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{{params, std::nullopt, std::nullopt}}, options) {}

std::vector<std::string> SGD::buffer_names() const {
  if (options_.momentum == 0) return {};
  return {"momentum_buffer"};
}

void SGD::step() {
  NoGradGuard no_grad;
  const double mu = options_.momentum;
  for (const ParamGroup& group : groups_) {
    const double lr = *group.lr, wd = *group.weight_decay;
    for (const auto& [path, p] : group.params) {
      Tensor g = grad_for_step(path, p);
      if (!g.defined()) continue;
      ParamState& st = state(path);
      st.step += 1;
      if (wd != 0) g = g + p * wd;  // g ← g + wd·p
      if (mu != 0) {
        Tensor b;
        auto it = st.buffers.find("momentum_buffer");
        if (it == st.buffers.end()) {
          b = st.buffers["momentum_buffer"] = g.clone();  // b ← g on the first step
        } else {
          b = it->second;
          copy_(b, b * mu + g * (1.0 - options_.dampening));  // b ← μ·b + (1 − dampening)·g
        }
        g = options_.nesterov ? g + b * mu : b;  // nesterov: g + μ·b, else b
      }
      copy_(p, p - g * lr);  // p ← p − lr·g
    }
  }
}

}  // namespace mase::train
