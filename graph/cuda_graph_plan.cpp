// graph/cuda_graph_plan.cpp — capturing and replaying a compiled plan (see cuda_graph_plan.h).
#include "graph/cuda_graph_plan.h"

#include <typeinfo>

#include "models/layers.h"

namespace mase::graph {

bool reads_on_host(const Graph& g, const Node& n) {
  if (n.op == OpKind::call_module) {  // nn::Embedding's forward is the embedding op
    const nn::Module* m = g.root().submodule(n.target).get();
    return m && typeid(*m) == typeid(nn::Embedding);
  }
  if (n.op != OpKind::call_function && n.op != OpKind::call_method) return false;
  // autograd/ops/embedding.cpp (check_ids), view.cpp (to_dtype), factory.cpp (arange_like),
  // cross_entropy.cpp (the targets)
  for (const char* op : {"embedding", "to_dtype", "arange_like", "cross_entropy"})
    if (n.target == op) return true;
  return false;
}

std::unique_ptr<CapturedPlan> CapturedPlan::capture(const Graph& g, const Plan& plan,
                                                    const AllocationPlan& all_inside,
                                                    const NamedTensors& inputs) {
  MASE_CHECK(!inputs.empty() && inputs.front().second.is_cuda(), ConfigError,
             "[cuda_graph] expected inputs on a CUDA device, got ",
             inputs.empty() ? std::string("none") : inputs.front().second.device().str());
  MASE_CHECK(!grad_enabled(), ConfigError,
             "[cuda_graph] expected autograd off, got it on (capture under NoGradGuard: a graph "
             "launch does not record the backward tape)");
  auto c = std::make_unique<CapturedPlan>();
  c->plan = &plan;
  for (size_t i = 0; i < plan.steps(); ++i)
    if (reads_on_host(g, plan.node(i))) c->prologue = i + 1;
  MASE_CHECK(2 * c->prologue <= plan.steps(), ConfigError,
             "[cuda_graph] expected the steps that read on the host within the first half of ",
             plan.steps(), ", got step ", c->prologue - 1, " (", plan.node(c->prologue - 1).name,
             ") (too little of the plan after it to capture: it runs uncaptured)");
  const Device device = inputs.front().second.device();
  for (const auto& [name, t] : inputs) {  // the tensors the plan will read
    Tensor copy = Tensor::empty_like(t);
    copy_(copy, t);
    c->inputs.push_back({name, copy});
  }
  c->arena = std::make_unique<Arena>(device, all_inside.sizes, all_inside.offsets,
                                     all_inside.arena_bytes);
  CapturedPlan& cp = *c;
  Plan::Slots slots(plan.steps());
  Arena::Run run(*cp.arena);
  plan.run_steps(slots, cp.inputs, 0, cp.prologue, cp.outputs);  // runs now
  cp.graph = std::make_unique<CudaGraph>(device);
  cp.graph->capture([&] {  // recorded, not run
    plan.run_steps(slots, cp.inputs, cp.prologue, plan.steps(), cp.outputs);
  });
  MASE_CHECK(!run.diverged(), DeviceError,
             "[cuda_graph] expected the captured run to allocate as recorded, got other "
             "allocations (some from the driver, or at other addresses: it runs uncaptured)");
  return c;
}

std::optional<TensorMap> CapturedPlan::replay(const NamedTensors& in) const {
  for (size_t i = 0; i < in.size(); ++i) copy_(inputs.at(i).second, in[i].second);
  {
    Plan::Slots slots(plan->steps());
    TensorMap none;
    Arena::Run run(*arena);
    plan->run_steps(slots, inputs, 0, prologue, none);  // its values at the captured addresses
    if (run.diverged()) return std::nullopt;
    run.skip_rest();
    graph->replay();  // reads the prologue's values: stream-ordered after its kernels
  }  // the prologue's values die here (their bytes are the next replay's, after this launch)
  TensorMap out;
  for (const auto& [name, t] : outputs) out[name] = t.clone();
  return out;
}

}  // namespace mase::graph
