// models/module.cpp — the Module tree (see module.h).
#include "models/module.h"

#include <sstream>


namespace mase::nn {

namespace {
thread_local ModuleObserver* t_observer = nullptr;
std::string join(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  return name.empty() ? prefix : prefix + "." + name;
}
}  // namespace

ModuleObserver* set_module_observer(ModuleObserver* observer) {
  ModuleObserver* prev = t_observer;
  t_observer = observer;
  return prev;
}
ModuleObserver* module_observer() { return t_observer; }

std::string Precision::str() const {
  std::string s = type + "[";
  for (size_t i = 0; i < widths.size(); ++i) s += (i ? ", " : "") + std::to_string(widths[i]);
  return s + "]";
}

Precision dtype_precision(DType t) {
  return {is_floating(t) ? "float" : "integer", {static_cast<int64_t>(itemsize(t) * 8)}};
}

Precision Module::precision(const std::string& name) const {
  for (const auto& [n, slot] : params_)
    if (n == name && slot->defined()) return dtype_precision(slot->dtype());
  throw ConfigError(cat("[precision] ", type_name(), " has no parameter '", name, "'"));
}

Tensor Module::forward(const Tensor&) {
  throw Error(cat("[", type_name(), "] has no unary forward (call its own forward method)"));
}

Tensor Module::operator()(const Tensor& x) {
  if (t_observer) return t_observer->on_call(*this, x, [&] { return forward(x); });
  return forward(x);
}

Tensor& Module::register_parameter(const std::string& name, Tensor& slot, Tensor value,
                                   bool requires_grad) {
  slot = std::move(value);
  if (slot.defined()) slot.set_requires_grad(requires_grad);
  params_.push_back({name, &slot});
  return slot;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& slot, Tensor value) {
  slot = std::move(value);
  buffers_.push_back({name, &slot});
  return slot;
}

void Module::collect(const std::string& prefix, bool params, bool recurse, NamedTensors& out) const {
  for (const auto& [name, slot] : params ? params_ : buffers_)
    if (slot->defined()) out.push_back({join(prefix, name), *slot});
  if (!recurse) return;
  for (const auto& c : children_)
    if (ModulePtr m = c.get()) m->collect(join(prefix, c.name), params, true, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", false, recurse, out);
  return out;
}

NamedModules Module::named_children() const {
  NamedModules out;
  for (const auto& c : children_)
    if (ModulePtr m = c.get()) out.push_back({c.name, m});
  return out;
}

ModulePtr Module::self(const char* op) {
  // shared_from_this() would throw std::bad_weak_ptr: say what is wrong instead
  ModulePtr p = weak_from_this().lock();
  MASE_CHECK(p, ConfigError, "[", op, "] expected a ", type_name(),
             " owned by a std::shared_ptr, got one that is not (build modules with "
             "std::make_shared, as the module tree holds them)");
  return p;
}

NamedModules Module::named_modules() {
  NamedModules out{{"", self("named_modules")}};
  for (const auto& [name, child] : named_children())
    for (auto& [sub, m] : child->named_modules()) out.push_back({join(name, sub), m});
  return out;
}

ModulePtr Module::submodule(const std::string& path) {
  if (path.empty()) return self("submodule");
  Module* cur = this;  // walk the dotted path one name at a time, so errors show all of it
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string head = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const ChildSlot* slot = nullptr;
    for (const auto& c : cur->children_)
      if (c.name == head && !slot) slot = &c;
    MASE_CHECK(slot, ConfigError, "[submodule] no module '", head, "' in ", cur->type_name(),
               " (path '", path, "')");
    ModulePtr m = slot->get();
    if (dot == std::string::npos) return m;
    MASE_CHECK(m, ConfigError, "[submodule] '", path.substr(0, dot), "' is empty (path '", path, "')");
    cur = m.get();
    start = dot + 1;
  }
}

void Module::replace_submodule(const std::string& path, ModulePtr m) {
  MASE_CHECK(m, ConfigError, "[replace_submodule] expected a module for '", path,
             "', got a null pointer (use Identity to remove one)");
  auto dot = path.rfind('.');
  ModulePtr owner = dot == std::string::npos ? nullptr : submodule(path.substr(0, dot));
  MASE_CHECK(dot == std::string::npos || owner, ConfigError, "[replace_submodule] '",
             path.substr(0, dot), "' is empty (path '", path, "')");
  Module* parent = owner ? owner.get() : this;
  std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  for (auto& c : parent->children_) {
    if (c.name != leaf) continue;
    MASE_CHECK(c.set(m), ConfigError, "[replace_submodule] '", path, "' holds a ",
               c.get() ? c.get()->type_name() : std::string("null"), " and cannot hold a ",
               m->type_name());
    m->train(parent->training_);
    parent->child_replaced(leaf);
    return;
  }
  throw ConfigError(cat("[replace_submodule] no module at '", path, "'"));
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& c : children_)
    if (ModulePtr m = c.get()) m->train(on);
}

void Module::zero_grad() {
  for (const Tensor& p : parameters())
    if (p.grad().defined()) fill_(p.grad(), 0.0);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const auto& [name, p] : named_parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

void Module::to(Device device) {
  require_device(device);
  // every tensor slot: parameters, buffers and the gradients of parameters
  std::vector<Tensor> tensors;
  for (auto& [name, t] : named_parameters()) {
    tensors.push_back(t);
    if (t.grad().defined()) tensors.push_back(t.grad());
  }
  for (auto& [name, t] : named_buffers()) tensors.push_back(t);
  std::vector<Tensor> moved;
  for (const Tensor& t : tensors) moved.push_back(t.detach().to(device));  // may throw: nothing changed
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (moved[i].storage() == tensors[i].storage()) continue;  // already there
    TensorImpl* impl = tensors[i].impl();
    impl->storage = moved[i].storage();
    impl->strides = moved[i].strides();
    impl->offset = moved[i].offset();
  }
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : named_parameters()) out[name] = t;
  for (auto& [name, t] : named_buffers()) out[name] = t;
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  std::map<std::string, Tensor> mine = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : mine) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
    } else if (it->second.shape() != t.shape()) {
      mismatched.push_back(cat(name, " (checkpoint ", it->second.shape(), ", model ", t.shape(), ")"));
    }
  }
  for (const auto& [name, t] : state)
    if (!mine.count(name)) unexpected.push_back(name);
  if (!mismatched.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
      return s;
    };
    std::string msg = "[load_state_dict] checkpoint does not match the model:";
    if (!missing.empty()) msg += cat(" missing ", missing.size(), " key(s): ", list(missing), ";");
    if (!unexpected.empty()) msg += cat(" unexpected ", unexpected.size(), " key(s): ", list(unexpected), ";");
    if (!mismatched.empty()) msg += cat(" wrong shape: ", list(mismatched), ";");
    msg.pop_back();
    throw ConfigError(msg);
  }
  NoGradGuard ng;
  for (auto& [name, t] : mine) {
    auto it = state.find(name);
    if (it != state.end()) copy_(t, it->second);
  }
}

void Module::str_rec(std::string& out, const std::string& name, int indent) const {
  std::string pad(indent, ' ');
  out += pad + (name.empty() ? "" : "(" + name + "): ") + type_name() + "(" + extra_repr();
  auto kids = named_children();
  if (kids.empty()) {
    out += ")\n";
    return;
  }
  out += "\n";
  for (const auto& [n, m] : kids) m->str_rec(out, n, indent + 2);
  out += pad + ")\n";
}

std::string Module::str() const {
  std::string out;
  str_rec(out, "", 0);
  return out;
}

}  // namespace mase::nn
