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
// Read next: train/optimizer.h.
#pragma once
#include <vector>

#include "train/optimizer.h"

namespace mase::train {

// Returns the total norm before clipping. ConfigError unless max_norm > 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const NamedTensors& params, double max_norm);
double clip_grad_norm(const Optimizer& opt, double max_norm);  // every parameter it holds

// The total norm only (no clipping): for logging.
double grad_norm(const std::vector<Tensor>& params);

}  // namespace mase::train
