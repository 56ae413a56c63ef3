// graph/cuda_graph_plan.h — a compiled plan captured as a CUDA graph (the "cuda_graph" step of
// graph::compile, eval on a GPU): a steady-state replay is a copy of the inputs in, a short
// eager prologue, ONE cudaGraphLaunch for the rest of the plan, and a copy of the outputs out.
//
// How (runtime/cuda_graph.h says what capture demands):
//  * the prologue: a few ops read their inputs on the host, which a capture cannot contain —
//    embedding checks its ids there, to_dtype converts the mask through the host, arange_like
//    copies positions up, cross_entropy reads the labels. The plan's steps up to the last such
//    op (BERT: its embeddings and mask) run eagerly at every replay; the rest is captured.
//    A plan whose last host op comes late (a loss at the end) leaves little to capture:
//    capture() refuses when fewer than half the steps would be captured.
//  * the arena: the plan's allocations, recorded on its first replay (graph/compile.cpp), are
//    placed in one arena with EVERY block inside it, outputs kept always
//    (plan_allocations(events, all_inside = true)). The prologue runs in it too, so at every
//    replay its values land at the addresses the captured part reads, and the captured part
//    asks the driver for nothing. A replay whose prologue allocates differently is caught
//    (the arena run diverges) and runs the plan uncaptured instead.
//  * the inputs: copied once into tensors the plan reads (`inputs` below); each replay copies
//    the new batch into them first.
//  * the outputs: the captured run's output tensors live in the arena and are overwritten at
//    each launch, so replay() returns clones.
// Only without autograd (eval, NoGradGuard): a training step's backward is recorded by the
// tape as the forward runs, which a graph launch does not do. Training is not captured.
// Read next: graph/compile.h.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "graph/passes/memory_plan.h"
#include "graph/plan.h"
#include "runtime/allocator.h"
#include "runtime/cuda_graph.h"

namespace mase::graph {

// Whether a step reads its inputs on the host (so it cannot be captured).
bool reads_on_host(const Graph& g, const Node& n);

struct CapturedPlan {
  const Plan* plan = nullptr;
  size_t prologue = 0;           // steps [0, prologue) run eagerly at each replay
  std::unique_ptr<Arena> arena;  // every block of the run, outputs included
  NamedTensors inputs;           // what the plan reads: each replay copies into them
  TensorMap outputs;             // what the graph writes: in the arena
  std::unique_ptr<CudaGraph> graph;  // with its private pool for what leaves the arena

  // Runs the prologue on copies of `inputs` and captures the rest. DeviceError /
  // ConfigError with the reason when it cannot (the caller then runs the plan uncaptured).
  static std::unique_ptr<CapturedPlan> capture(const Graph& g, const Plan& plan,
                                               const AllocationPlan& all_inside,
                                               const NamedTensors& inputs);
  // Copies `inputs` in (the signature guarantees names and shapes), runs the prologue,
  // launches, and returns clones of the outputs; nullopt when the prologue's allocations
  // left the plan (nothing launched: run the plan uncaptured).
  std::optional<TensorMap> replay(const NamedTensors& inputs) const;
};

}  // namespace mase::graph
