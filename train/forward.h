// train/forward.h — the one model call a training step and an evaluation make, replaceable.
//
// The trainer (train/trainer.h) and evaluate() (train/evaluate.h) run the model through a
// Forward: a function of a batch already on the model's device. By default it is the eager
// call, model.forward(input_ids, attention_mask, token_type_ids, labels). `mase-train
// --compile` passes a ForwardFactory that returns a compiled plan's call instead
// (graph::compiled_forward, graph/compile.h): train/ sits below graph/ in the layers, so it
// is handed the function and never includes graph/.
// The factory is called once per model, after every model transform (quantization, LoRA,
// pruning) and before training; with one, the session does NOT call nn::fuse_kernels: the
// compiler traces the unfused model and decides the fusions on the graph.
// Read next: train/trainer.h, graph/compile.h (compiled_forward).
#pragma once
#include <functional>
#include <memory>

#include "data/batch.h"
#include "models/bert.h"

namespace mase::train {

// x is on the model's device; train/eval mode and grad mode are the caller's.
using Forward = std::function<nn::SequenceClassifierOutput(const data::Batch& x)>;
using ForwardFactory =
    std::function<Forward(const std::shared_ptr<nn::BertForSequenceClassification>& model)>;

// model.forward(x.input_ids, x.attention_mask, x.token_type_ids, x.labels)
inline Forward eager_forward(nn::BertForSequenceClassification& model) {
  return [&model](const data::Batch& x) {
    return model.forward(x.input_ids, x.attention_mask, x.token_type_ids, x.labels);
  };
}

}  // namespace mase::train
