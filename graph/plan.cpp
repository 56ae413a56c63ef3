// graph/plan.cpp — building and replaying a Plan (see plan.h).
#include "graph/plan.h"

#include <algorithm>
#include <unordered_map>

namespace mase::graph {

Plan::Plan(const Graph& g) : root_(g.root_ptr()), output_names_(g.output_names()) {
  MASE_CHECK(g.output_node() != nullptr, graph::GraphError,
             "[plan] expected a graph with an output node, got none");
  const std::vector<Node*> nodes = g.nodes();
  std::unordered_map<const Node*, int64_t> slot, last_use;
  for (size_t i = 0; i < nodes.size(); ++i) {
    slot[nodes[i]] = static_cast<int64_t>(i);
    for (const Node* a : nodes[i]->args)
      if (a) last_use[a] = static_cast<int64_t>(i);
  }
  steps_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    Step& s = steps_[i];
    s.node = &n;
    for (const Node* a : n.args) s.args.push_back(a ? slot.at(a) : -1);
    for (const Node* a : n.args)
      if (a && last_use.at(a) == static_cast<int64_t>(i) &&
          std::find(s.frees.begin(), s.frees.end(), slot.at(a)) == s.frees.end())
        s.frees.push_back(slot.at(a));
    switch (n.op) {
      case OpKind::placeholder:
        if (find_attr(n.attrs, "shape")) s.shape = Shape(attr_ints(n.attrs, "shape"));
        if (find_attr(n.attrs, "dtype")) s.dtype = attr_string(n.attrs, "dtype");
        break;
      case OpKind::get_attr:
        s.value = g.get_attr_value(n);
        break;
      case OpKind::call_module:
        MASE_CHECK(n.args.size() == 1, graph::GraphError, "[plan] expected call_module ", n.name,
                   " to have 1 argument (a module takes one tensor), got ", n.args.size());
        s.module = g.root().submodule(n.target);
        break;
      case OpKind::call_function:
      case OpKind::call_method:
        s.op = &op_info(n.target);
        break;
      case OpKind::output:
        break;
    }
  }
}

TensorMap Plan::run(const NamedTensors& inputs, const NodeHook& hook) const {
  Slots value(steps_.size());
  TensorMap out;
  run_steps(value, inputs, 0, steps_.size(), out, hook);
  return out;
}

void Plan::run_steps(Slots& value, const NamedTensors& inputs, size_t begin, size_t end,
                     TensorMap& out, const NodeHook& hook) const {
  MASE_CHECK(root_ != nullptr, graph::GraphError,
             "[plan] expected a built plan, got an empty one (build it from a graph: Plan(g))");
  MASE_CHECK(value.size() == steps_.size() && begin <= end && end <= steps_.size(),
             graph::GraphError, "[plan] expected steps within [0, ", steps_.size(), ") and ",
             steps_.size(), " slots, got [", begin, ", ", end, ") and ", value.size());
  const bool training = root_->is_training();
  Tensors args;
  for (size_t i = begin; i < end; ++i) {
    const Step& s = steps_[i];
    const Node& n = *s.node;
    for (int64_t a : s.args) args.push_back(a >= 0 ? value[a] : Tensor());
    Tensor v;
    switch (n.op) {
      case OpKind::placeholder: {
        auto it = std::find_if(inputs.begin(), inputs.end(),
                               [&](const auto& in) { return in.first == n.target; });
        MASE_CHECK(it != inputs.end() && it->second.defined(), graph::GraphError,
                   "[plan] expected input '", n.target, "', got none");
        v = it->second;
        MASE_CHECK(s.shape.empty() || s.shape == v.shape(), ShapeError, "[plan] expected input ",
                   n.target, " of shape ", s.shape, " as compiled, got ", v.shape(),
                   " (a plan is specialised to one signature: graph::Compiled picks the plan "
                   "by shape)");
        MASE_CHECK(s.dtype.empty() || mase::name(v.dtype()) == s.dtype, DTypeError,
                   "[plan] expected input ", n.target, " of dtype ", s.dtype, " as compiled, got ",
                   v.dtype(), " (a plan is specialised to one signature)");
        break;
      }
      case OpKind::get_attr:
        v = s.value;
        break;
      case OpKind::call_module:  // an op's error names its node: rethrow_in_node (graph.h)
        try {
          v = (*s.module)(args[0]);
        } catch (const Error&) {
          rethrow_in_node(n);
        }
        break;
      case OpKind::call_function:
      case OpKind::call_method:
        try {
          v = s.op->run(args, n.attrs, training);
        } catch (const Error&) {
          rethrow_in_node(n);
        }
        break;
      case OpKind::output:
        for (size_t k = 0; k < args.size(); ++k) out[output_names_.at(k)] = args[k];
        break;
    }
    if (hook) hook(n, args, v);
    value[i] = std::move(v);
    args.clear();  // then free what no later step reads (nothing else holds it now)
    for (int64_t f : s.frees) value[f] = Tensor();
  }
}

}  // namespace mase::graph
