// train/train_step.cpp — one optimizer step (see train_step.h for the two paths).
#include "train/train_step.h"

#include "runtime/profiler.h"
#include "train/clip_grad_norm.h"

namespace mase::train {
namespace {

// The host path: ask the GPU (if any) for the loss and the norm as soon as they exist.
StepResult host_checked_step(nn::BertForSequenceClassification& model, AdamW& opt,
                             const Tensor& loss, int64_t tokens, double clip) {
  StepResult s{.loss = loss.item(), .tokens = tokens};
  if (!std::isfinite(s.loss)) return s;                     // diverged: weights untouched
  profile::mark_phase("backward");
  backward(loss);                                           // every parameter's .grad
  profile::mark_phase("clip");
  s.grad_norm = clip > 0 ? clip_grad_norm(opt, clip) : grad_norm(model.parameters());
  if (!std::isfinite(s.grad_norm)) {                        // diverged: weights untouched,
    opt.zero_grad();                                        // no NaN left for the next step
    return s;
  }
  profile::mark_phase("optimizer");
  opt.set_gate(Tensor());
  opt.step();                                               // AdamW
  opt.zero_grad();                                          // ready for the next backward
  return s;
}

// On the GPU, cross_entropy and embedding check their targets and ids on the device (a bad
// one only makes the loss NaN: the ops explain why), so a batch is checked here, on the host,
// while it still is there: a typed error naming the bad value, as on the CPU.
void check_range(const char* what, const Tensor& t, int64_t n) {
  if (!t.defined() || !t.is_cpu() || t.dtype() != DType::i32) return;
  const Tensor c = t.contiguous();
  const int32_t* p = c.data<int32_t>();
  for (int64_t i = 0; i < c.numel(); ++i)
    MASE_CHECK(p[i] >= 0 && p[i] < n, ShapeError, "[train_step] expected ", what, " in [0, ", n,
               "), got ", p[i], " at flat index ", i, " of the batch");
}

}  // namespace

void check_batch(const nn::BertForSequenceClassification& model, const data::Batch& batch) {
  const nn::BertConfig& cfg = model.config();
  check_range("labels", batch.labels, cfg.num_labels);
  check_range("input_ids", batch.input_ids, cfg.vocab_size);
  check_range("token_type_ids", batch.token_type_ids, cfg.type_vocab_size);
}

void device_step_work(nn::BertForSequenceClassification& model, AdamW& opt,
                      const data::Batch& x, double clip, const Tensor& clip_state,
                      const Forward& forward) {
  profile::mark_phase("forward");
  Tensor loss = forward ? forward(x).loss
                        : model.forward(x.input_ids, x.attention_mask, x.token_type_ids, x.labels).loss;
  profile::mark_phase("backward");
  backward(loss);
  profile::mark_phase("clip");
  const std::vector<Tensor> params = parameters_of(opt);
  MASE_CHECK(can_clip_on_device(params), Error,
             "[train_step] expected every trainable parameter's gradient on the GPU");
  clip_grad_norm_device(params, clip, clip_state, loss);  // clip <= 0: measures only
  profile::mark_phase("optimizer");
  opt.step();                                              // AdamW, gated on the device
  opt.zero_grad();
}

StepResult train_step(nn::BertForSequenceClassification& model, AdamW& opt,
                      const data::Batch& batch, Device device, double clip, Tensor& clip_state,
                      const Forward& forward) {
  check_batch(model, batch);
  profile::mark_phase("data");
  data::Batch x = data::to_device(batch, device);          // the batch on the model's device
  profile::mark_phase("forward");
  Tensor loss = forward ? forward(x).loss
                        : model.forward(x.input_ids, x.attention_mask, x.token_type_ids, x.labels).loss;
  if (!device.is_cuda()) return host_checked_step(model, opt, loss, x.real_tokens, clip);
  if (!clip_state.defined()) clip_state = make_clip_state(device);
  opt.set_gate(clip_state);
  if (!opt.step_is_gated()) return host_checked_step(model, opt, loss, x.real_tokens, clip);

  // The GPU path: no host sync until the readback.
  profile::mark_phase("backward");
  backward(loss);
  profile::mark_phase("clip");
  const std::vector<Tensor> params = parameters_of(opt);
  if (!can_clip_on_device(params)) {  // e.g. backward reached no parameter: the host path's clip
    opt.set_gate(Tensor());
    StepResult s{.loss = loss.item(), .tokens = x.real_tokens};
    s.grad_norm = clip > 0 ? clip_grad_norm(params, clip) : grad_norm(params);
    profile::mark_phase("optimizer");
    if (std::isfinite(s.loss) && std::isfinite(s.grad_norm)) opt.step();
    opt.zero_grad();
    return s;
  }
  clip_grad_norm_device(params, clip, clip_state, loss);   // clip <= 0: measures only
  profile::mark_phase("optimizer");
  opt.step();                                               // AdamW, gated on the device
  opt.zero_grad();
  profile::mark_phase("readback");
  const ClipReadout r = read_clip_state(clip_state);        // the step's one host sync
  return StepResult{.loss = r.loss, .tokens = x.real_tokens, .grad_norm = r.norm};
}

}  // namespace mase::train
