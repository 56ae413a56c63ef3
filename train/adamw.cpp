// train/adamw.cpp — AdamW's step: state, scalars, and the call to the fused kernel (math in
// adamw.h and runtime/kernels/adamw.h).
#include "train/adamw.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/kernels/adamw.h"
#include "runtime/kernels/graph_capture.h"
#include "runtime/kernels/multi_tensor.h"

namespace mase::train {
namespace {

AdamWOptions checked(AdamWOptions o) {
  MASE_CHECK(o.beta1 >= 0 && o.beta1 < 1, ConfigError, "[AdamW] expected beta1 in [0, 1), got ",
             o.beta1);
  MASE_CHECK(o.beta2 >= 0 && o.beta2 < 1, ConfigError, "[AdamW] expected beta2 in [0, 1), got ",
             o.beta2);
  check_at_least("AdamW", "eps", o.eps, 0.0);
  return o;
}

bool per_tensor_forced() {  // MASE_ADAMW=per-tensor: one launch per parameter (to compare)
  const char* v = std::getenv("MASE_ADAMW");
  return v && std::strcmp(v, "per-tensor") == 0;
}

// One parameter's update this step.
struct Update {
  Tensor p, g, m, v;
  AdamWScalars s;
};

// The GPU path: every update a packed f32 tensor on one GPU.
bool multi_tensor_applies(const std::vector<Update>& us) {
  if (us.empty() || per_tensor_forced()) return false;
  for (const Update& u : us)
    if (!u.p.is_cuda() || u.p.dtype() != DType::f32 || u.p.device() != us.front().p.device())
      return false;
  return true;
}

}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Optimizer("AdamW", std::move(groups), options.lr, options.weight_decay),
      options_(checked(options)) {}

AdamW::AdamW(const NamedTensors& params, AdamWOptions options, const NoDecayFn& no_decay)
    : AdamW(decay_groups(params, options.weight_decay, no_decay), options) {}

AdamWScalars adamw_scalars(const AdamWOptions& o, double lr, double weight_decay, int64_t t) {
  // in double, as PyTorch computes them in Python floats
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(t));
  return {1.0 - lr * weight_decay, o.beta1, o.beta2, o.eps, lr / bc1, std::sqrt(bc2)};
}

bool AdamW::step_is_gated() const {
  if (!gate_.defined() || !options_.fused || per_tensor_forced()) return false;
  for (const ParamGroup& group : groups_)
    for (const auto& [path, p] : group.params)
      if (!p.is_cuda() || p.dtype() != DType::f32 || p.device() != gate_.device()) return false;
  return true;
}

void AdamW::step() {
  NoGradGuard no_grad;
  std::vector<Update> updates;
  std::vector<ParamState*> states;
  std::vector<std::string> paths;
  std::vector<const ParamGroup*> groups;
  for (const ParamGroup& group : groups_) {
    for (const auto& [path, p] : group.params) {
      Tensor g = grad_for_step(path, p);
      if (!g.defined()) continue;
      MASE_CHECK(!p.is_cuda() || p.dtype() == DType::f32, DTypeError,
                 "[AdamW] CUDA kernels take f32, got ", p.dtype(), " for '", path, "'");
      ParamState& st = state(path);
      if (st.buffers.empty()) {  // first step: m = v = 0
        st.buffers["exp_avg"] = Tensor::zeros_like(p);
        st.buffers["exp_avg_sq"] = Tensor::zeros_like(p);
      }
      updates.push_back({p, g, st.buffers["exp_avg"], st.buffers["exp_avg_sq"], {}});
      states.push_back(&st);
      paths.push_back(path);
      groups.push_back(&group);
    }
  }
  const bool multi = options_.fused && multi_tensor_applies(updates);
  // Under CUDA graph capture the step is recorded, not taken: the step counts and the
  // scalars' upload are prepare_replay's, before each replay (train/graph_step.h).
  const bool capturing = multi && cuda::stream_capturing();
  if (capturing) {
    captured_ = paths;
  } else {
    for (size_t i = 0; i < updates.size(); ++i) {
      states[i]->step += 1;
      updates[i].s = adamw_scalars(options_, *groups[i]->lr, *groups[i]->weight_decay,
                                   states[i]->step);
    }
  }
  if (multi) {
    // one multi-tensor update for the whole model (runtime/kernels/multi_tensor.h)
    std::vector<float*> ps, ms, vs;
    std::vector<const float*> gs;
    std::vector<int64_t> n;
    std::vector<float> slots;
    for (const Update& u : updates) {
      ps.push_back(u.p.data<float>());
      ms.push_back(u.m.data<float>());
      vs.push_back(u.v.data<float>());
      gs.push_back(u.g.data<float>());
      n.push_back(u.p.numel());
      slots.insert(slots.end(), {static_cast<float>(u.s.decay), static_cast<float>(u.s.step_size),
                                 static_cast<float>(u.s.bc2_sqrt)});
    }
    const Device dev = updates.front().p.device();
    const int64_t count = static_cast<int64_t>(slots.size());
    if (capturing) {
      MASE_CHECK(slots_.defined() && slots_.numel() == count && slots_.device() == dev, Error,
                 "[AdamW] a captured step needs an uncaptured step of the same parameters "
                 "first (its scalars' device buffer)");
    } else {
      if (!slots_.defined() || slots_.numel() != count || slots_.device() != dev)
        slots_ = Tensor::empty({count}, DType::f32, dev);
      copy_(slots_, Tensor::from(slots, {count}));  // one small upload, in stream order
    }
    const AdamWConstants c{static_cast<float>(options_.beta2),
                           static_cast<float>(1.0 - options_.beta1),
                           static_cast<float>(1.0 - options_.beta2),
                           static_cast<float>(options_.eps)};
    const bool gated = gate_.defined() && gate_.device() == dev;
    cuda::multi_adamw(ps, ms, vs, gs, n, plan_multi_tensor(n), slots_.data<float>(), c,
                      gated ? gate_.data<double>() : nullptr);
    return;
  }
  for (const Update& u : updates) {
    if (!options_.fused) {
      adamw_step_reference(u.p, u.m, u.v, u.g, u.s);
    } else if (u.p.is_cuda()) {
      cuda::adamw_step(u.p.data<float>(), u.m.data<float>(), u.v.data<float>(), u.g.data<float>(),
                       u.s, u.p.numel());
    } else {
      dispatch_float(u.p.dtype(), "AdamW", [&]<class T>() {
        cpu::adamw_step<T>(u.p.data<T>(), u.m.data<T>(), u.v.data<T>(), u.g.data<T>(), u.s,
                           u.p.numel());
      });
    }
  }
}

void AdamW::prepare_replay(const std::vector<std::string>& paths) {
  std::vector<float> slots;
  for (const std::string& path : paths) {
    const ParamGroup* group = nullptr;
    for (const ParamGroup& g : groups_)
      for (const auto& [q, p] : g.params)
        if (q == path) group = &g;
    MASE_CHECK(group, Error, "[AdamW] prepare_replay: no parameter '", path, "'");
    ParamState& st = state(path);
    st.step += 1;
    const AdamWScalars s = adamw_scalars(options_, *group->lr, *group->weight_decay, st.step);
    slots.insert(slots.end(), {static_cast<float>(s.decay), static_cast<float>(s.step_size),
                               static_cast<float>(s.bc2_sqrt)});
  }
  const int64_t count = static_cast<int64_t>(slots.size());
  MASE_CHECK(slots_.defined() && slots_.numel() == count, Error,
             "[AdamW] prepare_replay: the captured step updated another set of parameters");
  copy_(slots_, Tensor::from(slots, {count}));  // before the replay, in stream order
}

void adamw_step_reference(const Tensor& p, const Tensor& m, const Tensor& v, const Tensor& g,
                          const AdamWScalars& s) {
  NoGradGuard no_grad;
  // written in the fused kernel's order of operations, so the two agree to the last bit
  // wherever the compiler does not contract a*b+c into an FMA
  Tensor m1 = m + (g - m) * (1.0 - s.beta1);         // m ← m + (1 − β1)(g − m)
  Tensor v1 = v * s.beta2 + g * (1.0 - s.beta2) * g;  // v ← β2 v + (1 − β2) g²
  Tensor denom = sqrt(v1) / s.bc2_sqrt + s.eps;      // √v̂ + ε = √v / √(1 − β2^t) + ε
  Tensor p1 = p * s.decay - (m1 / denom) * s.step_size;  // p(1 − lr·wd) − lr/(1 − β1^t)·m/denom
  copy_(m, m1);
  copy_(v, v1);
  copy_(p, p1);
}

}  // namespace mase::train
