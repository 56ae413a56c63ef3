// graph/metadata.h — the "common" metadata pass of MASE: what each node is and what flows
// through it.
//
// For every node (NodeMeta in graph.h):
//   mase_type   placeholder | get_attr | output                  (the node kinds themselves)
//               module_related_func   a call of a standard layer: a Linear, Dropout, … module
//                                     call, or a function that is one (linear, softmax, sdpa)
//               module                a call of a model-specific leaf (LoraLinear, …)
//               builtin_func          arithmetic and tensor functions (add, matmul, ones_like)
//               implicit_func         shape plumbing (view, transpose, getitem, to)
//   mase_op     linear, dropout, layer_norm, gelu, embedding, matmul, softmax, add, view, …
//   args / results     shape and dtype of each input and output value (from a real run)
//   parameters  call_module: the module's parameters (name, shape, dtype, precision from
//               Module::precision() — float[32], or what a quantized wrapper reports — and
//               whether it is trainable); get_attr: the tensor it reads
// The shapes come from running the graph once on `example` (no gradients; the default
// random generator is saved and restored, so annotating never moves a seeded run's stream).
// Read next: graph/draw.h (which shows this metadata), graph/export.h (which saves it).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "graph/graph.h"

namespace mase::graph {

void add_common_metadata(Graph& graph, const TensorMap& example);

// (mase_type, mase_op) of a call of module `m`: Linear -> (module_related_func, linear);
// a type not in the table -> (module, its type name in snake_case: lora_linear).
std::pair<std::string, std::string> module_mase_op(const nn::Module& m);

nlohmann::json to_json(const NodeMeta& meta);
NodeMeta node_meta_from_json(const nlohmann::json& j);  // GraphError on a malformed object

}  // namespace mase::graph
