// train/optimizer.cpp — parameter groups, checks, zero_grad, lr and state dicts (see
// optimizer.h). The update rules themselves are in adamw.cpp and sgd.cpp.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace mase::train {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void check_at_least(const std::string& op, const char* what, double value, double lo) {
  MASE_CHECK(value >= lo, ConfigError, "[", op, "] expected ", what, " >= ", lo, ", got ", value);
}

bool is_no_decay(const std::string& path, const Tensor&) {
  if (ends_with(path, "bias")) return true;
  if (path.find("LayerNorm") != std::string::npos || path.find("layer_norm") != std::string::npos)
    return true;
  return path == "norm.weight" || ends_with(path, ".norm.weight");
}

std::vector<ParamGroup> decay_groups(const NamedTensors& params, double weight_decay,
                                     const NoDecayFn& no_decay) {
  ParamGroup decay{{}, std::nullopt, weight_decay}, plain{{}, std::nullopt, 0.0};
  for (const auto& [path, p] : params)
    (no_decay && no_decay(path, p) ? plain : decay).params.push_back({path, p});
  std::vector<ParamGroup> groups;
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  if (!plain.params.empty()) groups.push_back(std::move(plain));
  return groups;
}

// ---- construction and checks ------------------------------------------------------------

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr,
                     double default_weight_decay)
    : name_(std::move(name)), groups_(std::move(groups)) {
  std::set<std::string> paths;
  std::set<TensorImpl*> tensors;
  size_t count = 0;
  for (ParamGroup& g : groups_) {
    if (!g.lr) g.lr = default_lr;
    if (!g.weight_decay) g.weight_decay = default_weight_decay;
    check_at_least(name_, "lr", *g.lr, 0.0);
    check_at_least(name_, "weight_decay", *g.weight_decay, 0.0);
    initial_lrs_.push_back(*g.lr);
    for (const auto& [path, p] : g.params) {
      MASE_CHECK(p.defined(), ConfigError, "[", name_, "] parameter '", path, "' is undefined");
      MASE_CHECK(is_floating(p.dtype()), DTypeError, "[", name_, "] expected parameter '", path,
                 "' to be f32 or f64, got ", p.dtype());
      MASE_CHECK(paths.insert(path).second, ConfigError, "[", name_, "] parameter '", path,
                 "' appears more than once (each parameter belongs to one group)");
      MASE_CHECK(tensors.insert(p.impl()).second, ConfigError, "[", name_, "] parameter '", path,
                 "' is the same tensor as another parameter (tied weights: pass it once)");
      ++count;
    }
  }
  MASE_CHECK(count > 0, ConfigError, "[", name_,
             "] expected at least one parameter, got an empty parameter list");
}

Tensor Optimizer::grad_for_step(const std::string& path, const Tensor& p) const {
  const Tensor& g = p.grad();
  if (!p.requires_grad() || !g.defined()) return Tensor();  // frozen, or not reached by backward
  MASE_CHECK(g.shape() == p.shape(), ShapeError, "[", name_, "] expected the gradient of '", path,
             "' to have shape ", p.shape(), ", got ", g.shape());
  MASE_CHECK(g.dtype() == p.dtype(), DTypeError, "[", name_, "] expected the gradient of '", path,
             "' to be ", p.dtype(), ", got ", g.dtype());
  MASE_CHECK(g.device() == p.device(), DeviceError, "[", name_, "] expected the gradient of '",
             path, "' on ", p.device(), ", got ", g.device());
  MASE_CHECK(p.is_contiguous(), Error, "[", name_, "] expected parameter '", path,
             "' to be contiguous, got strides of a view (optimize the tensor the view is of)");
  return g.contiguous();
}

// ---- gradients and learning rate --------------------------------------------------------

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& g : groups_)
    for (const auto& [path, p] : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) p.set_grad(Tensor());
      else fill_(p.grad(), 0.0);
    }
}

void Optimizer::set_lr(double lr) {
  check_at_least(name_, "lr", lr, 0.0);
  for (ParamGroup& g : groups_) g.lr = lr;
}

void Optimizer::set_lr_factor(double factor) {
  check_at_least(name_, "lr factor", factor, 0.0);
  for (size_t i = 0; i < groups_.size(); ++i) groups_[i].lr = initial_lrs_[i] * factor;
}

double Optimizer::lr(size_t group) const {
  MASE_CHECK(group < groups_.size(), ConfigError, "[", name_, "] expected a group index < ",
             groups_.size(), ", got ", group);
  return *groups_[group].lr;
}

int64_t Optimizer::step_count(const std::string& path) const {
  auto it = state_.find(path);
  return it == state_.end() ? 0 : it->second.step;
}

// ---- state dicts ------------------------------------------------------------------------

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> out;
  for (const auto& [path, st] : state_) {
    for (const auto& [buf, t] : st.buffers) out[path + "." + buf] = t;
    out[path + ".step"] = Tensor::scalar(static_cast<double>(st.step), DType::f64);
  }
  return out;
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> params;
  for (const ParamGroup& g : groups_)
    for (const auto& [path, p] : g.params) params[path] = p;
  const std::vector<std::string> buffers = buffer_names();

  std::map<std::string, ParamState> loaded;
  std::map<std::string, std::set<std::string>> seen;  // path -> the keys found for it
  std::ostringstream problems;
  for (const auto& [key, t] : state) {
    // split "<path>.<what>" at the last '.', then check both halves
    const size_t dot = key.rfind('.');
    const std::string path = dot == std::string::npos ? "" : key.substr(0, dot);
    const std::string what = dot == std::string::npos ? key : key.substr(dot + 1);
    auto p = params.find(path);
    if (p == params.end()) {
      problems << "\n  '" << key << "': no parameter '" << path << "' in this optimizer";
      continue;
    }
    if (!t.defined()) {
      problems << "\n  '" << key << "': undefined tensor";
      continue;
    }
    if (what == "step") {
      const double v = t.numel() == 1 ? t.item() : -1.0;
      if (!(v >= 0) || v != std::floor(v)) {
        problems << "\n  '" << key << "': expected a non-negative integer scalar, got shape "
                 << t.shape();
        continue;
      }
      loaded[path].step = static_cast<int64_t>(v);
    } else if (std::find(buffers.begin(), buffers.end(), what) != buffers.end()) {
      if (t.shape() != p->second.shape() || !is_floating(t.dtype())) {
        problems << "\n  '" << key << "': expected " << p->second.shape() << " floating, got "
                 << t.shape() << " " << t.dtype();
        continue;
      }
      Tensor copy = Tensor::empty(p->second.shape(), p->second.dtype(), p->second.device());
      copy_(copy, t);  // converts dtype and moves to the parameter's device
      loaded[path].buffers[what] = copy;
    } else {
      problems << "\n  '" << key << "': " << name_ << " has no state named '" << what << "'";
      continue;
    }
    seen[path].insert(what);
  }
  for (const auto& [path, whats] : seen) {
    if (!whats.count("step")) problems << "\n  '" << path << "': missing '" << path << ".step'";
    for (const std::string& b : buffers)
      if (!whats.count(b)) problems << "\n  '" << path << "': missing '" << path << "." << b << "'";
  }
  const std::string msg = problems.str();
  MASE_CHECK(msg.empty(), ConfigError, "[", name_, ".load_state_dict] the state does not match ",
             "this optimizer:", msg);
  state_ = std::move(loaded);
}

}  // namespace mase::train
