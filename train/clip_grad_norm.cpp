// train/clip_grad_norm.cpp — total gradient norm and in-place scaling (see clip_grad_norm.h).
#include "train/clip_grad_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/kernels/grad_norm.h"
#include "runtime/kernels/multi_tensor.h"

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

bool host_clip_forced() {  // MASE_CLIP=host: the per-tensor path with its host sum (to compare)
  const char* v = std::getenv("MASE_CLIP");
  return v && std::strcmp(v, "host") == 0;
}

// Every gradient a packed f32 CUDA tensor on one device, and at least one.
bool all_on_one_gpu(const std::vector<Tensor>& grads) {
  if (grads.empty() || host_clip_forced()) return false;
  for (const Tensor& g : grads)
    if (!g.is_cuda() || g.dtype() != DType::f32 || !g.is_contiguous() ||
        g.device() != grads.front().device())
      return false;
  return true;
}

// Σ g² per chunk, the norm, coefficient and finite flag into `state`, and (max_norm > 0) the
// scaling: runtime/kernels/multi_tensor.h, a few launches for the whole model.
void clip_on_device(const std::vector<Tensor>& grads, double max_norm, const Tensor& state,
                    const Tensor& loss) {
  std::vector<const float*> xs;
  std::vector<float*> ws;
  std::vector<int64_t> n;
  for (const Tensor& g : grads) {
    xs.push_back(g.data<float>());
    ws.push_back(g.data<float>());
    n.push_back(g.numel());
  }
  const std::vector<MultiTensorLaunch> plan = plan_multi_tensor(n);
  const int64_t chunks = multi_tensor_chunks(plan);
  Tensor partials = Tensor::empty({std::max<int64_t>(chunks, 1)}, DType::f64, grads.front().device());
  cuda::multi_sum_squares(partials.data<double>(), xs, n, plan);
  cuda::clip_finish(state.data<double>(), partials.data<double>(), chunks, max_norm,
                    loss.defined() ? loss.data<float>() : nullptr);
  if (max_norm > 0) cuda::multi_scale(ws, n, plan, state.data<double>());
}

}  // namespace

bool can_clip_on_device(const std::vector<Tensor>& params) { return all_on_one_gpu(grads_of(params)); }

Tensor make_clip_state(Device device) {
  return Tensor::zeros({kClipStateSize}, DType::f64, device);
}

void clip_grad_norm_device(const std::vector<Tensor>& params, double max_norm, const Tensor& state,
                           const Tensor& loss) {
  const std::vector<Tensor> grads = grads_of(params);
  MASE_CHECK(all_on_one_gpu(grads), DeviceError,
             "[clip_grad_norm_device] expected packed f32 gradients on one GPU (see "
             "can_clip_on_device)");
  MASE_CHECK(state.defined() && state.is_cuda() && state.dtype() == DType::f64 &&
                 state.numel() == kClipStateSize && state.is_contiguous() &&
                 state.device() == grads.front().device(),
             DeviceError, "[clip_grad_norm_device] expected a state from make_clip_state on ",
             grads.front().device());
  MASE_CHECK(!loss.defined() || (loss.is_cuda() && loss.dtype() == DType::f32 && loss.numel() == 1),
             DeviceError, "[clip_grad_norm_device] expected a one-element f32 CUDA loss");
  clip_on_device(grads, max_norm, state, loss);
}

ClipReadout read_clip_state(const Tensor& state) {
  const std::vector<double> v = state.to_vector<double>();
  MASE_CHECK(v.size() == size_t(kClipStateSize), ShapeError, "[read_clip_state] expected ",
             int(kClipStateSize), " values, got ", v.size());
  return {v[kClipNorm], v[kClipLoss], v[kClipFinite] != 0.0};
}

std::vector<Tensor> parameters_of(const Optimizer& opt) {
  std::vector<Tensor> ps;
  for (const ParamGroup& g : opt.param_groups())
    for (const auto& [path, p] : g.params) ps.push_back(p);
  return ps;
}

namespace {

// The device path with the norm read back (one host sync): what clip_grad_norm returns.
double clip_on_device_and_read(const std::vector<Tensor>& grads, double max_norm) {
  Tensor state = make_clip_state(grads.front().device());
  clip_on_device(grads, max_norm, state, Tensor());
  return state.to_vector<double>()[kClipNorm];
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params) {
  const std::vector<Tensor> grads = grads_of(params);
  if (all_on_one_gpu(grads)) return clip_on_device_and_read(grads, 0.0);
  return total_norm(grads);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  MASE_CHECK(max_norm > 0, ConfigError, "[clip_grad_norm] expected max_norm > 0, got ", max_norm);
  const std::vector<Tensor> grads = grads_of(params);
  if (all_on_one_gpu(grads)) return clip_on_device_and_read(grads, max_norm);
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
  return clip_grad_norm(parameters_of(opt), max_norm);
}

}  // namespace mase::train
