// train/clip_grad_norm.cpp — total gradient norm and in-place scaling (see clip_grad_norm.h).
#include "train/clip_grad_norm.h"

#include <cmath>

#include "runtime/kernels/grad_norm.h"

namespace mase::train {
namespace {

// The gradients to measure: defined ones, packed (a non-packed gradient is unusual; its packed
// copy is measured, and scaled by copying back).
std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const Tensor& g = p.grad();
    MASE_CHECK(is_floating(g.dtype()), DTypeError, "[clip_grad_norm] expected f32 or f64 ",
               "gradients, got ", g.dtype());
    MASE_CHECK(!g.is_cuda() || g.dtype() == DType::f32, DTypeError,
               "[clip_grad_norm] CUDA kernels take f32, got ", g.dtype());
    grads.push_back(g);
  }
  return grads;
}

double total_norm(const std::vector<Tensor>& grads) {
  // Σ g² over the CPU gradients, in order; the GPU ones write their per-block partial sums
  // into one device buffer that comes back with a single copy.
  double sum = 0;
  std::vector<Tensor> on_gpu;
  for (const Tensor& g : grads) {
    if (g.is_cuda()) {
      on_gpu.push_back(g);
      continue;
    }
    Tensor gc = g.contiguous();
    sum += dispatch_float(g.dtype(), "clip_grad_norm",
                          [&]<class T>() { return cpu::sum_squares<T>(gc.data<T>(), gc.numel()); });
  }
  if (!on_gpu.empty()) {
    const int64_t nb = cuda::kSumSquaresBlocks;
    Tensor partials = Tensor::empty({static_cast<int64_t>(on_gpu.size()), nb}, DType::f64,
                                    on_gpu.front().device());
    for (size_t i = 0; i < on_gpu.size(); ++i) {
      Tensor gc = on_gpu[i].contiguous();
      cuda::sum_squares_partials(partials.data<double>() + i * nb, gc.data<float>(), gc.numel());
    }
    for (double p : partials.to_vector<double>()) sum += p;  // fixed order: deterministic
  }
  return std::sqrt(sum);
}

void scale_(const Tensor& g, double coef) {
  Tensor gc = g.contiguous();  // g itself when packed (the usual case): scaled in place
  mul_(gc, coef);
  if (!gc.is_same(g)) copy_(g, gc);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params) { return total_norm(grads_of(params)); }

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  MASE_CHECK(max_norm > 0, ConfigError, "[clip_grad_norm] expected max_norm > 0, got ", max_norm);
  const std::vector<Tensor> grads = grads_of(params);
  const double norm = total_norm(grads);
  if (!std::isfinite(norm)) return norm;  // inf/NaN gradients: leave them for the caller to see
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0)  // else coef is clamped to 1: nothing to do
    for (const Tensor& g : grads) scale_(g, coef);
  return norm;
}

double clip_grad_norm(const NamedTensors& params, double max_norm) {
  std::vector<Tensor> ps;
  for (const auto& [path, p] : params) ps.push_back(p);
  return clip_grad_norm(ps, max_norm);
}

double clip_grad_norm(const Optimizer& opt, double max_norm) {
  std::vector<Tensor> ps;
  for (const ParamGroup& g : opt.param_groups())
    for (const auto& [path, p] : g.params) ps.push_back(p);
  return clip_grad_norm(ps, max_norm);
}

}  // namespace mase::train
