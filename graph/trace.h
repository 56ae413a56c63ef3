// graph/trace.h — capture a model's forward as a Graph by running it once.
//
// Tracing runs the model on real example tensors with two observers installed (the hooks of
// autograd/engine.h and models/module.h):
//  * every call of a LEAF module (Linear, Embedding, LayerNorm, Dropout, GELU, LoraLinear, …:
//    Module::is_leaf()) becomes ONE call_module node named after its path, and the ops inside
//    it are not recorded;
//  * every other op reports (name, inputs, attrs, output) and becomes a call_function or
//    call_method node (graph/op_table.h decides which);
//  * the example inputs are placeholders; a parameter or buffer of the model read outside a
//    leaf module becomes a get_attr node (found by tensor identity); any other tensor an op
//    reads that no node produced (a tensor made with a raw factory inside the forward)
//    becomes a get_attr constant holding the example run's value;
//  * the results are the output node. Nodes nothing uses (and stray steps inside composite
//    ops) are removed at the end (dead-code elimination), except, in training mode, those
//    that draw random numbers: an unread dropout still moves the generator on, as eager's
//    does (graph/passes/dce.h).
// Values are followed by tensor identity (TensorImpl) without being kept alive: intermediates
// are freed when the model lets go of them, as in eager, so a trace costs about one eager
// forward (a tensor that died is told from a new one at its address by a weak reference).
//
// Like torch.fx's symbolic trace, this captures ONE path through the forward: the one the
// example takes (with or without labels, with or without a mask). Unlike it, the trace is
// concrete: shapes in view/reshape are the example's numbers (see Graph::run).
//
// Read next: graph/metadata.h (annotating the nodes), graph/draw.h.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "data/batch.h"
#include "graph/graph.h"
#include "models/bert.h"

namespace mase::graph {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// The call trace() records: named inputs -> named outputs.
using ForwardFn = std::function<NamedTensors(const TensorMap& inputs)>;

// Runs forward(inputs) once on `root` (in its current train/eval mode, without gradients;
// the default random generator is restored afterwards) and returns the graph. Placeholders
// follow the order of `inputs` and record each example's shape and dtype as attrs.
Graph trace(nn::ModulePtr root, const NamedTensors& inputs, const ForwardFn& forward);

// ---- BERT ---------------------------------------------------------------------------------
// The inputs BertForSequenceClassification takes, in this order.
const std::vector<std::string>&
bert_input_names();  // input_ids, attention_mask, token_type_ids, labels

// `names` picked from a batch: input_ids is required, the others optional; ConfigError for
// an unknown or repeated name, or a name whose tensor the batch lacks.
NamedTensors bert_inputs(const std::vector<std::string>& names, const data::Batch& batch);

// Traces model->forward(input_ids, attention_mask, token_type_ids, labels) with the chosen
// inputs (the others absent). Outputs: "logits", and "loss" when labels are an input. Without
// attention_mask the model builds its all-ones mask inside the graph (a ones_like node).
Graph trace_bert(const std::shared_ptr<nn::BertForSequenceClassification>& model,
                 const std::vector<std::string>& input_names, const data::Batch& example);

// The inputs of a graph traced by trace_bert, taken from a batch by the graph's input names.
TensorMap graph_inputs(const Graph& graph, const data::Batch& batch);

// A batch of `batch_size` sequences of `seq_len` ids in [1, vocab_size) drawn from
// Generator(seed), attention_mask with the last `pad` positions of the second sequence
// padded, token_type_ids 0, labels alternating 0, 1: an example for tracing and tests.
data::Batch example_batch(int64_t batch_size, int64_t seq_len, int64_t vocab_size,
                          uint64_t seed = 0, int64_t pad = 0);

}  // namespace mase::graph
