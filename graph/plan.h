// graph/plan.h — an executable plan: a Graph with everything the interpreter looks up by name
// resolved once, so that replaying it does only the work of the ops.
//
// Graph::run (graph.h) re-derives on every call what never changes between calls: each
// node's position and last use (two hash maps), its op by name in the op table (a string
// search), its module by path (a walk of the module tree), its parameter by path. A Plan does
// that once: a vector of steps, each with its op function, module or tensor already bound,
// its arguments as slot numbers, and the slots to free after it (a value dies after its last
// user, as in Graph::run). Replaying it runs the same ops in the same order, so its outputs,
// gradients (autograd records through it as through Graph::run) and dropout masks are Graph::
// run's, bit for bit.
//
// What it binds: the module objects and parameter tensors of the model AS THEY ARE when the
// plan is built. Training updates parameters in place (the same tensors): fine. Replacing a
// module or a parameter tensor (insert_lora, a quantization pass, loading into new tensors)
// leaves a plan calling the old ones: build a new plan (graph::Compiled::clear()).
// Read next: graph/compile.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/op_table.h"
#include "graph/trace.h"

namespace mase::graph {

class Plan {
 public:
  Plan() = default;  // empty: run() refuses it
  explicit Plan(const Graph& g);
  // Runs the steps on `inputs` (one per placeholder, by name, of the traced shape and dtype:
  // ShapeError / DTypeError otherwise). Training mode is the model's, as for Graph::run.
  TensorMap run(const NamedTensors& inputs, const NodeHook& hook = {}) const;
  size_t steps() const { return steps_.size(); }
  const Node& node(size_t step) const { return *steps_.at(step).node; }

  // run() in pieces (graph/cuda_graph_plan.h runs a prefix eagerly and captures the rest):
  // steps [begin, end) on `slots` (one per step, kept between calls); the output step, when
  // among them, fills `out`.
  using Slots = std::vector<Tensor>;
  void run_steps(Slots& slots, const NamedTensors& inputs, size_t begin, size_t end,
                 TensorMap& out, const NodeHook& hook = {}) const;

 private:
  struct Step {
    const Node* node = nullptr;
    const OpInfo* op = nullptr;   // call_function / call_method
    nn::ModulePtr module;         // call_module
    Tensor value;                 // get_attr: the parameter or constant
    std::vector<int64_t> args;    // slots (-1: an absent tensor)
    std::vector<int64_t> frees;   // slots whose last reader is this step
    Shape shape;                  // placeholder: as traced
    std::string dtype;
  };
  nn::ModulePtr root_;
  std::vector<Step> steps_;
  std::vector<std::string> output_names_;
};

}  // namespace mase::graph
