// train/adamw.h — AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", 2019),
// exactly as torch.optim.AdamW computes it. For each parameter p with gradient g, at its t-th
// step (t counts from 1):
//   p ← p − lr·wd·p                      decoupled weight decay (not added to g)
//   m ← β1·m + (1 − β1)·g                exp_avg
//   v ← β2·v + (1 − β2)·g²               exp_avg_sq
//   m̂ = m / (1 − β1^t),  v̂ = v / (1 − β2^t)   bias correction (m and v start at 0)
//   p ← p − lr·m̂ / (√v̂ + eps)
// The whole update is ONE pass over p, g, m, v: the fused kernel runtime/cpu/adamw.cpp (CUDA:
// cuda/adamw.cu). adamw_step_reference composes the same update from tensor ops; it is the
// kernel's meaning and its test oracle (options.fused = false runs it).
//
// Typical use (BERT fine-tuning: no decay for biases and LayerNorm weights):
//   train::AdamW opt(model->named_parameters(), {.lr = 2e-5, .weight_decay = 0.01});
//   ... backward(loss); clip_grad_norm(...); opt.set_lr_factor(schedule.factor(step));
//   opt.step(); opt.zero_grad();
//
// On the GPU, when every parameter is a packed f32 CUDA tensor, step() is a multi-tensor
// update (runtime/kernels/multi_tensor.h): a few launches for the whole model instead of one
// per parameter, with the per-tensor scalars (lr schedule, bias corrections) uploaded as one
// small array. MASE_ADAMW=per-tensor selects the one-launch-per-parameter path (to compare).
//
// Read next: runtime/kernels/adamw.h (the kernel), train/sgd.h.
#pragma once
#include "runtime/kernels/adamw.h"  // AdamWScalars
#include "train/optimizer.h"

namespace mase::train {

struct AdamWOptions {
  double lr = 1e-3;            // default for groups that do not set their own
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // >= 0, added to √v̂
  double weight_decay = 1e-2;  // default for groups that do not set their own
  bool fused = true;           // false: adamw_step_reference (tests, comparisons)
};

class AdamW : public Optimizer {
 public:
  // Explicit groups; unset lr / weight_decay come from `options`. ConfigError on bad values.
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
  // decay_groups(params, options.weight_decay, no_decay): biases and LayerNorm weights get no
  // decay by default; pass nullptr to decay every parameter.
  explicit AdamW(const NamedTensors& params, AdamWOptions options = {},
                 const NoDecayFn& no_decay = is_no_decay);

  void step() override;
  const AdamWOptions& options() const { return options_; }

  // A clip state (train/clip_grad_norm.h, make_clip_state) whose finite flag gates the GPU
  // multi-tensor step on the device: where it reads 0 (a NaN/inf loss or gradient) the
  // kernels leave every parameter and buffer as it was, with no host sync to find out. Only
  // that path reads it (step_is_gated() says whether the next step() takes it); Tensor() clears.
  void set_gate(Tensor clip_state) { gate_ = std::move(clip_state); }
  bool step_is_gated() const;

  // ---- CUDA graphs (train/graph_step.h) ----
  // While the stream is captured, the multi-tensor step() only records its kernels: it counts
  // no step and uploads no scalars (a copy from host memory cannot be captured; the kernels
  // read the scalars from the device buffer an uncaptured step made). captured_updates() are
  // the parameters it recorded; before each replay, prepare_replay(those) counts the step and
  // uploads that step's scalars (learning rate, bias corrections).
  const std::vector<std::string>& captured_updates() const { return captured_; }
  void prepare_replay(const std::vector<std::string>& paths);

 protected:
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  AdamWOptions options_;
  Tensor gate_;       // see set_gate
  Tensor slots_;      // per-tensor scalars on the GPU (multi-tensor path), reused every step
  std::vector<std::string> captured_;  // see captured_updates
};

// The per-tensor scalars of step t (≥ 1) for a group with this lr and weight decay.
AdamWScalars adamw_scalars(const AdamWOptions& options, double lr, double weight_decay, int64_t t);

// The same update as the fused kernel, from tensor ops (each a full pass, with temporaries):
// param, exp_avg and exp_avg_sq are updated in place from grad. Any device, f32 or f64.
void adamw_step_reference(const Tensor& param, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                          const Tensor& grad, const AdamWScalars& s);

}  // namespace mase::train
