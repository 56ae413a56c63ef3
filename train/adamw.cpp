// train/adamw.cpp — AdamW's step: state, scalars, and the call to the fused kernel (math in
// adamw.h and runtime/kernels/adamw.h).
#include "train/adamw.h"

#include <cmath>

#include "runtime/kernels/adamw.h"

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

void AdamW::step() {
  NoGradGuard no_grad;
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
      st.step += 1;
      const AdamWScalars s = adamw_scalars(options_, *group.lr, *group.weight_decay, st.step);
      const Tensor& m = st.buffers["exp_avg"];
      const Tensor& v = st.buffers["exp_avg_sq"];
      if (!options_.fused) {
        adamw_step_reference(p, m, v, g, s);
      } else if (p.is_cuda()) {
        cuda::adamw_step(p.data<float>(), m.data<float>(), v.data<float>(), g.data<float>(), s,
                         p.numel());
      } else {
        dispatch_float(p.dtype(), "AdamW", [&]<class T>() {
          cpu::adamw_step<T>(p.data<T>(), m.data<T>(), v.data<T>(), g.data<T>(), s, p.numel());
        });
      }
    }
  }
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
