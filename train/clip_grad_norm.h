// train/clip_grad_norm.h — gradient-norm clipping, as torch.nn.utils.clip_grad_norm_.
//
// The total norm is the L2 norm of all gradients together, as if concatenated into one vector:
//   norm = √(Σ_p Σ_i g_p,i²)
// computed in double and deterministically (fixed summation order whatever the number of
// threads; runtime/cpu/grad_norm.cpp). If the norm exceeds max_norm, every gradient is
// scaled in place by
//   coef = max_norm / (norm + 1e-6)         (clamped to 1: small gradients are left alone)
// so the clipped norm is just under max_norm. Parameters without a gradient are skipped. A
// non-finite norm (inf/NaN gradients) is returned as is and nothing is scaled: the caller
// decides (e.g. skip the step).
//
// On the GPU the whole computation stays on the device (runtime/kernels/multi_tensor.h): Σ g²
// per chunk of every gradient, one block adding the partials in a fixed order, the
// coefficient, and one scaling pass — a handful of launches for the whole model instead of two
// per parameter. clip_grad_norm() then reads the norm back (one host sync, for its return
// value); clip_grad_norm_device() does not: the norm, the coefficient and a finite flag stay
// in a small device tensor that AdamW reads (AdamW::set_gate) and the trainer reads only when
// it logs. MASE_CLIP=host selects the older per-tensor path (to compare; scripts/gpu/step.sh).
//
// Read next: train/optimizer.h.
#pragma once
#include <cmath>
#include <vector>

#include "train/optimizer.h"

namespace mase::train {

// Returns the total norm before clipping. ConfigError unless max_norm > 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const NamedTensors& params, double max_norm);
double clip_grad_norm(const Optimizer& opt, double max_norm);  // every parameter it holds

// The total norm only (no clipping): for logging.
double grad_norm(const std::vector<Tensor>& params);

// ---- on the GPU, without a host sync ---------------------------------------------------------
// True when every gradient of `params` is a packed f32 CUDA tensor on one device (and
// MASE_CLIP is not "host"): clip_grad_norm_device applies.
bool can_clip_on_device(const std::vector<Tensor>& params);
// A state tensor for clip_grad_norm_device: kClipStateSize f64 on `device` (norm, coefficient,
// finite flag; runtime/kernels/multi_tensor.h). Keep one and pass it every step.
Tensor make_clip_state(Device device);
// Clips as clip_grad_norm does (max_norm <= 0: measures only), all on the device; writes the
// norm, the coefficient and the finite flag into `state`. `loss` (optional, a one-element f32
// tensor on the GPU) joins the finite flag, so one flag says "the step may update the weights".
void clip_grad_norm_device(const std::vector<Tensor>& params, double max_norm, const Tensor& state,
                           const Tensor& loss = Tensor());
// The norm and the loss a state holds (one copy to the host: a sync).
struct ClipReadout {
  double norm = NAN, loss = NAN;
  bool finite = false;
};
ClipReadout read_clip_state(const Tensor& state);
std::vector<Tensor> parameters_of(const Optimizer& opt);  // every parameter it holds, in order

}  // namespace mase::train
