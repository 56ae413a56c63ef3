// train/train_step.h — one optimizer step of BERT fine-tuning: the function the trainer
// (train/trainer.cpp) runs per batch and the GPU step profile (bench/bench_gpu_step.cpp) times.
//
//   batch  -> the model's device                                   phase "data"
//   loss   = cross_entropy(model(batch), labels)  (dropout on)     phase "forward"
//   backward(loss)                                                 phase "backward"
//   norm   = clip_grad_norm(params, clip)                          phase "clip"
//   AdamW step; zero_grad                                          phase "optimizer"
// and the weights move only when the loss and the norm are finite.
//
// Two ways to get there:
//  * on the CPU (or with MASE_ADAMW=per-tensor / MASE_CLIP=host), the host reads the loss after
//    forward and the norm after the clip, and skips the rest when one is NaN/inf;
//  * on the GPU, nothing waits until the end: backward runs whatever the loss, the clip keeps
//    norm, coefficient and a finite flag on the device (train/clip_grad_norm.h), AdamW's
//    multi-tensor kernels read the flag and leave everything as it was when it is 0, and the
//    host reads the loss and the norm in one copy (phase "readback"). A GPU that never waits
//    for the host's questions is what lets the host run ahead and queue the next kernels.
// The phase names are stamps for the step profiler (runtime/profiler.h); free when it is off.
//
// Read next: train/trainer.h (the loop around it), train/clip_grad_norm.h, train/adamw.h.
#pragma once
#include <cmath>
#include <cstdint>

#include "data/batch.h"
#include "models/bert.h"
#include "train/adamw.h"
#include "train/forward.h"

namespace mase::train {

// What one step did: its loss, the gradient norm before clipping (NaN when the loss was not
// finite on the host path: nothing was computed) and the real (not padding) tokens it trained on.
struct StepResult {
  double loss = 0;
  int64_t tokens = 0;
  double grad_norm = NAN;
};

// One step on `batch` (on the CPU; moved to `device` here). `clip` > 0 clips the gradient norm
// to it; <= 0 only measures it. `clip_state`: the GPU path's device state, created on first use
// and kept by the caller from step to step (its address stays the same: CUDA graphs need that).
// `forward`: the model call (train/forward.h: a compiled plan under --compile); empty = eager.
StepResult train_step(nn::BertForSequenceClassification& model, AdamW& opt,
                      const data::Batch& batch, Device device, double clip, Tensor& clip_state,
                      const Forward& forward = {});

// ShapeError unless the batch's labels, input ids and token types (on the CPU) are in range
// for `model`: on the GPU the ops only turn a bad one into a NaN loss (no host sync to check).
void check_batch(const nn::BertForSequenceClassification& model, const data::Batch& batch);

// The GPU path's device work, from a batch already on the GPU to AdamW and zero_grad: no host
// sync, no copy from the host — what train/graph_step.h captures. Needs opt.step_is_gated()
// with clip_state set as the gate; the caller reads clip_state afterwards (read_clip_state).
// `forward`: the model call, as for train_step (a compiled plan: --compile --cuda-graphs).
void device_step_work(nn::BertForSequenceClassification& model, AdamW& opt,
                      const data::Batch& on_device, double clip, const Tensor& clip_state,
                      const Forward& forward = {});

}  // namespace mase::train
