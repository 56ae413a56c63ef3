// graph/compile.h — compile: trace a model once per input signature, run the passes, build an
// executable plan, and replay it on later calls with the same signature (Lab 4.1).
//
//   auto compiled = graph::compile_bert(model);               // nothing traced yet
//   TensorMap out = compiled(graph::bert_inputs(names, batch));
//   // 1st call: trace -> passes -> plan -> first run; same shapes again: replay the plan;
//   // another bucket length: compile again, and keep both plans
//
// The signature is what a plan is specialised to: the inputs' names, shapes and dtypes, and
// the model's train/eval mode (a traced graph records view shapes as numbers, and in eval
// mode the pipeline removes dropout). It is the cache key, so a changed shape never replays
// a plan made for another (tested); the plan also checks each input's shape as it runs.
//
// The passes, in order (CompileOptions::disabled turns any of them off, by name):
//   remove_dropout   eval mode only: dropout is the identity there (graph/passes/dropout.h)
//   fold_lora        eval mode without autograd only (a folded constant has no gradient
//                    path to A and B; a folded plan is not replayed with grad on): each LoRA
//                    update folded into its weight, W + s·B·A, and
//                    refolded before a replay if W, A or B moved (on CUDA: before every
//                    replay; graph/passes/fold_lora.h)
//   fuse_bias_gelu   Linear + GELU -> linear + bias_gelu (graph/passes/fuse_bias_gelu.h); a
//                    linear(x, w, b) call (a folded LoRA layer) is a Linear here too
//   fuse_linear_gelu eval mode only: linear + bias_gelu -> linear_gelu, one node, which on
//                    AMX under --precision bf16 without autograd applies GELU in the GEMM's
//                    tile store (the eager fused model's op; graph/passes/fuse_linear_gelu.h)
//   fuse_add_norm    Linear + Dropout + add + LayerNorm -> linear + dropout_add_layer_norm
//   fold_mxint8      constant folding: MXINT8 weights unpacked once, within a memory budget
//                    (graph/passes/fold_mxint8.h)
//   narrow_cls       eval and training: the classifier reads the [CLS] row of the
//                    last layer, so the last layer's query side, attention output and FFN
//                    compute that row only, its dropouts drawing eager's masks for it
//                    (graph/passes/narrow_cls.h); outputs and gradients equal eager's up to
//                    fp32 reassociation
//   recompute_gelu   training only: bias_gelu + linear -> bias_gelu_linear, the GELU output
//                    recomputed in backward instead of kept (graph/passes/recompute_gelu.h)
//   dce              dead-code elimination (graph/passes/dce.h)
//   freeze_weights   eval mode on the CPU, only with CompileOptions::freeze (the weights will
//                    not change): each Linear weight packed once into oneDNN's blocked layout,
//                    the plan's Linears run on those copies (graph/passes/freeze_weights.h)
//   memory_plan      an analysis after the first run: lifetimes of the graph's values, arena
//                    offsets, planned peak (graph/passes/memory_plan.h)
//   arena            (runs without autograd: eval, NoGradGuard; with autograd the forward's
//                    temporaries are dead before backward's peak, and an arena would hold
//                    them idle through it)
//                    the memory plan made real: the first REPLAY records every allocation
//                    the plan makes (runtime/allocator.h), plan_allocations gives each an
//                    offset in one arena, and later replays run inside an Arena::Run that
//                    serves them there (outputs and what autograd saves stay outside). A
//                    replay whose allocations differ from the recording is still correct (the
//                    allocator falls back) and turns the arena off for that plan.
//   cuda_graph       on a GPU, without autograd (eval): the third call captures the plan,
//                    after its prologue of ops that read on the host (BERT's embeddings and
//                    mask), as one CUDA graph over an arena holding every block; each later
//                    call is: copy inputs in, the prologue, one cudaGraphLaunch, copy outputs
//                    out (graph/cuda_graph_plan.h). A plan CUDA refuses to capture runs
//                    without it, the reason kept in CompiledGraph::cuda_graph_note. It uses
//                    the arena's recording: with "arena" off there is no capture either.
// Trace the UNFUSED model (never nn::fuse_kernels before compiling): the fusions are decided
// here, on the graph. The compiled graph then runs the eager fused model's ops in its order,
// so its outputs and gradients equal eager's after nn::fuse_kernels, bit for bit on the CPU —
// except where a pass changes the sums: fold_lora, narrow_cls and freeze_weights agree within
// fp32 rounding only (disable narrow_cls, on by default, for the bitwise comparison).
//
// The plan binds the model's modules and parameter tensors when it is built: after replacing
// a module or a parameter tensor (LoRA, quantization), call clear().
// Read next: graph/plan.h, graph/passes/fuse_add_norm.h, tools/mase_graph.cpp (`compile`).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/frozen.h"
#include "graph/cuda_graph_plan.h"
#include "graph/passes/fold_lora.h"
#include "graph/passes/memory_plan.h"
#include "graph/plan.h"
#include "graph/trace.h"
#include "train/forward.h"

namespace mase::graph {

struct Signature {
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  bool training = false;
  static Signature of(const NamedTensors& inputs, bool training);
  // Whether these inputs have this signature (what every call checks: no allocation).
  bool matches(const NamedTensors& inputs, bool training) const;
  std::string str() const;  // "input_ids (2, 16) i32, attention_mask (2, 16) i32; eval"
};

struct CompileOptions {
  std::vector<std::string> disabled;                // pass names to skip
  size_t fold_budget_bytes = size_t(1) << 30;       // fold_mxint8: f32 bytes it may add
  // The caller promises that the weights will not change while these plans are used
  // (inference of a finished model): eval plans then pack their Linear weights once (pass
  // freeze_weights). After changing weights anyway, call clear().
  bool freeze = false;
  // arena: the most bytes all plans' arenas may hold at once; beyond it the least recently
  // replayed plans give theirs back (and make a new one when replayed again)
  size_t arena_budget_bytes = size_t(512) << 20;
};
// remove_dropout, fold_lora, fuse_bias_gelu, fuse_linear_gelu, fuse_add_norm, fold_mxint8,
// narrow_cls, recompute_gelu, dce, freeze_weights, memory_plan, arena, cuda_graph
const std::vector<std::string>& compile_pass_names();

struct PassRun {
  std::string name;
  double seconds = 0;
  size_t nodes_before = 0, nodes_after = 0;
  std::string report;  // the pass's own str()
};

// What the first call of a signature cost, step by step (seconds).
struct FirstCallSplit {
  double trace = 0, passes = 0, plan = 0, first_run = 0;
  // CPU time of the process (all threads) for the trace and the first run: on a shared
  // machine the wall times above include time slices lost to others
  double trace_cpu = 0, first_run_cpu = 0;
  double total() const { return trace + passes + plan + first_run; }
  // "first call 12.3 ms = trace 4.1 + passes 0.9 + plan 0.5 + first run 6.8 (ms); CPU time:
  // trace 4.0, first run 6.5 ms"
  std::string str() const;
};

struct CompiledGraph {
  CompiledGraph(Signature s, Graph g) : signature(std::move(s)), graph(std::move(g)) {}
  Signature signature;
  Graph graph;
  Plan plan;
  size_t traced_nodes = 0;
  std::vector<PassRun> passes;  // the ones that ran, in order
  std::vector<LoraFold> lora_folds;  // refreshed before every replay (fold_lora.h)
  std::shared_ptr<FrozenWeights> frozen;  // freeze_weights (the Compiled's one table): installed around every run
  int64_t narrowed_nodes = 0;  // narrow_cls: nodes computing one token instead of T
  bool memory_planned = false;
  MemoryPlan memory;
  FirstCallSplit first_call;
  // the arena (pass "arena"): recorded on the first replay, then served from
  bool arena_planned = false, arena_off = false;  // off: a replay diverged from the recording
  AllocationPlan allocations;
  std::unique_ptr<Arena> arena;  // null until planned, or while given back (the budget)
  double arena_seconds = 0;      // recording's overhead aside: planning the offsets
  int64_t last_used = 0;         // the Compiled's call count at its last replay
  // cuda_graph (CUDA, eval): the plan captured once, replayed with one launch
  AllocationPlan capture_allocations;     // every block inside (all_inside)
  std::unique_ptr<CapturedPlan> captured;
  bool cuda_graph_off = false;
  std::string cuda_graph_note;            // why capture failed, when it did
  double capture_seconds = 0;
};

class Compiled {
 public:
  // How a signature's graph is captured: trace(root, inputs, forward) for compile(), or
  // trace_bert for compile_bert().
  using TraceFn = std::function<Graph(const NamedTensors& inputs)>;
  Compiled(nn::ModulePtr root, TraceFn trace_fn, CompileOptions options = {});

  // Runs the plan of these inputs' signature, compiling it on first sight. Grad mode and
  // the model's train/eval mode are the caller's, as for an eager call.
  TensorMap operator()(const NamedTensors& inputs);

  const CompiledGraph& last() const;                // the plan the last call ran
  const CompiledGraph* find(const Signature& s) const;  // nullptr when not compiled
  size_t cache_size() const { return cache_.size(); }
  int64_t compiles() const { return compiles_; }
  int64_t replays() const { return replays_; }
  int64_t refolds() const { return refolds_; }  // fold_lora constants refolded before a replay
  int64_t arena_runs() const { return arena_runs_; }        // replays served from an arena
  int64_t arena_divergences() const { return arena_divergences_; }
  int64_t graph_launches() const { return graph_launches_; }  // replays as one CUDA graph
  void clear();  // forget every plan (after replacing modules or parameters)
  // "compile: 3 plans (2 train, 1 eval), 40 replays; first calls 0.41 s = trace 0.20 + passes
  // 0.00 + plan 0.00 + first run 0.21 (s)" (what mase-train --compile prints at the end)
  std::string summary() const;

 private:
  nn::ModulePtr root_;
  TraceFn trace_fn_;
  CompileOptions options_;
  // one entry per signature, searched in order (a handful: one per bucket length and mode)
  std::vector<std::unique_ptr<CompiledGraph>> cache_;
  std::shared_ptr<FrozenWeights> frozen_;  // freeze: shared by every eval plan
  const CompiledGraph* last_ = nullptr;
  int64_t compiles_ = 0, replays_ = 0, refolds_ = 0, arena_runs_ = 0, arena_divergences_ = 0,
          graph_launches_ = 0;
  bool enabled(const std::string& pass) const;
  TensorMap compile_and_run(const NamedTensors& inputs, const Signature& sig);
  TensorMap replay(CompiledGraph& cg, const NamedTensors& inputs);
  void make_arena(CompiledGraph& cg, Device device);  // within the budget
};

// compile for any model: its forward as trace() takes it.
Compiled compile(nn::ModulePtr root, ForwardFn forward, CompileOptions options = {});
// compile for BERT: inputs named as bert_input_names(), outputs logits (and loss with labels).
Compiled compile_bert(const std::shared_ptr<nn::BertForSequenceClassification>& model,
                      CompileOptions options = {});

// The trainer's model call (train/forward.h) through `compiled` (a compile_bert): the batch's
// defined tensors among input_ids, attention_mask, token_type_ids, labels are the inputs (in
// that order), and the plan's logits (and loss) the output. Each new batch shape or mode
// compiles once; what mase-train --compile runs.
train::Forward compiled_forward(std::shared_ptr<Compiled> compiled);

// CPU seconds the process has used, every thread together (the first-call report's CPU column).
double process_cpu_seconds();

}  // namespace mase::graph
