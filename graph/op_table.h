// graph/op_table.h — the ONE table from an op's recorded name to the function that re-runs it.
//
// Every op of autograd/ops.h reports itself to observers as record("name", inputs, out, …,
// attrs) (autograd/engine.h). A traced call_function / call_method node keeps that name as
// its target and those attrs; the interpreter (Graph::run) looks the name up here and calls
//   run(args, attrs, training)  ->  the op's output
// e.g. "transpose" -> transpose(args[0], attr_int(attrs, "dim0"), attr_int(attrs, "dim1")).
// The entry also says how the node is shown (call_function or call_method, as torch.fx would
// trace it) and its MASE metadata (mase_type, mase_op).
//
// Ops that take a training flag (dropout, dropout_add_layer_norm, sdpa) get the graph's
// current mode, not the one recorded at trace time, as modules do; dropout draws fresh masks
// from the default generator (the recorded seed/offset only describe the trace run).
// A new op in autograd/ops.h needs a line in op_table.cpp: tests/graph/test_op_table.cpp
// fails until it has one, and trace() refuses a model that records an unknown name.
// Read next: graph/trace.h.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

struct OpInfo {
  std::string name;       // as recorded: "add_scalar"
  OpKind kind;            // call_function or call_method
  std::string mase_type;  // builtin_func, module_related_func or implicit_func
  std::string mase_op;    // MASE's operator name: "add" (for add and add_scalar)
  std::function<Tensor(const Tensors& args, const Attrs& attrs, bool training)> run;
};

const std::vector<OpInfo>& op_table();
const OpInfo* find_op(std::string_view name);  // nullptr when unknown
const OpInfo& op_info(std::string_view name);  // GraphError naming the op when unknown

// Typed attr access: GraphError naming the key when absent or of another type (attr_double
// accepts an int, attr_ints a single int as a one-element list).
int64_t attr_int(const Attrs& attrs, std::string_view key);
double attr_double(const Attrs& attrs, std::string_view key);
bool attr_bool(const Attrs& attrs, std::string_view key);
std::string attr_string(const Attrs& attrs, std::string_view key);
std::vector<int64_t> attr_ints(const Attrs& attrs, std::string_view key);
const AttrValue* find_attr(const Attrs& attrs, std::string_view key);  // nullptr when absent
std::string attr_str(const AttrValue& v);  // "3", "0.1", "true", "(2, 16)", "f32"

DType dtype_from_name(std::string_view s);  // "f32" -> DType::f32; GraphError otherwise

// Whether running `n` in this mode may draw random numbers, i.e. move a generator on: in
// training, a dropout, dropout_add_layer_norm or sdpa whose drop probability is not 0, and
// every call_module (a module is opaque: Dropout and LoRA's dropout draw from the default
// generator, random pruning masks and stochastic quantizers from their own). Such a node has
// an effect beyond its value, so dead-code elimination keeps it (Graph::eliminate_dead_code).
// In eval it answers false: dropout is the identity there. (A stochastic quantizer draws in
// eval too; an unread call of one is removed in eval and its own stream then lags eager's.)
bool draws_random(const Node& n, bool training);

}  // namespace mase::graph
