// graph/compile.cpp — the signature cache and the compile pipeline (see compile.h).
#include "graph/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "graph/passes/dce.h"
#include "graph/passes/dropout.h"
#include "graph/passes/fold_lora.h"
#include "graph/passes/fold_mxint8.h"
#include "graph/passes/freeze_weights.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/fuse_bias_gelu.h"
#include "graph/passes/fuse_linear_gelu.h"
#include "graph/passes/narrow_cls.h"
#include "graph/passes/recompute_gelu.h"

namespace mase::graph {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", s * 1e3);
  return b;
}

}  // namespace

Signature Signature::of(const NamedTensors& inputs, bool training) {
  Signature s;
  s.training = training;
  for (const auto& [name, t] : inputs) {
    MASE_CHECK(t.defined(), graph::GraphError, "[compile] expected a defined tensor for input '",
               name, "', got an undefined one");
    s.names.push_back(name);
    s.shapes.push_back(t.shape());
    s.dtypes.push_back(t.dtype());
  }
  return s;
}

bool Signature::matches(const NamedTensors& inputs, bool train) const {
  if (train != training || inputs.size() != names.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].first != names[i] || !inputs[i].second.defined() ||
        inputs[i].second.shape() != shapes[i] || inputs[i].second.dtype() != dtypes[i])
      return false;
  return true;
}

std::string Signature::str() const {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += cat(i ? ", " : "", names[i], " ", shapes[i], " ", dtypes[i]);
  return s + (training ? "; train" : "; eval");
}

std::string FirstCallSplit::str() const {
  return cat("first call ", ms(total()), " ms = trace ", ms(trace), " + passes ", ms(passes),
             " + plan ", ms(plan), " + first run ", ms(first_run), " (ms); CPU time: trace ",
             ms(trace_cpu), ", first run ", ms(first_run_cpu), " ms");
}

const std::vector<std::string>& compile_pass_names() {
  static const std::vector<std::string> names{
      "remove_dropout", "fold_lora",      "fuse_bias_gelu", "fuse_linear_gelu",
      "fuse_add_norm",  "fold_mxint8",    "narrow_cls",     "recompute_gelu",
      "dce",            "freeze_weights", "memory_plan",    "arena",
      "cuda_graph"};
  return names;
}

Compiled::Compiled(nn::ModulePtr root, TraceFn trace_fn, CompileOptions options)
    : root_(std::move(root)), trace_fn_(std::move(trace_fn)), options_(std::move(options)) {
  MASE_CHECK(root_ != nullptr && trace_fn_ != nullptr, ConfigError,
             "[compile] expected a model and a trace function, got null");
  const auto& known = compile_pass_names();
  std::string list;
  for (const auto& p : known) list += (list.empty() ? "" : ", ") + p;
  for (const auto& p : options_.disabled)
    MASE_CHECK(std::find(known.begin(), known.end(), p) != known.end(), ConfigError,
               "[compile] expected a pass among ", list, ", got '", p, "'");
}

bool Compiled::enabled(const std::string& pass) const {
  return std::find(options_.disabled.begin(), options_.disabled.end(), pass) ==
         options_.disabled.end();
}

const CompiledGraph& Compiled::last() const {
  MASE_CHECK(last_ != nullptr, graph::GraphError,
             "[compile] expected a call before last(), got none (call the compiled model first)");
  return *last_;
}

const CompiledGraph* Compiled::find(const Signature& s) const {
  for (const auto& cg : cache_)
    if (cg->signature.str() == s.str()) return cg.get();
  return nullptr;
}

void Compiled::clear() {
  cache_.clear();
  frozen_.reset();
  last_ = nullptr;
}

TensorMap Compiled::operator()(const NamedTensors& inputs) {
  const bool training = root_->is_training();
  for (const auto& cg : cache_)
    // a plan that folded LoRA (constants, no autograd path to A and B) serves no-grad calls only
    if (cg->signature.matches(inputs, training) && (cg->lora_folds.empty() || !grad_enabled())) {
      ++replays_;
      for (LoraFold& f : cg->lora_folds) refolds_ += f.refresh();
      last_ = cg.get();
      FrozenScope frozen(cg->frozen.get());  // freeze_weights' packed Linears (null: none)
      return replay(*cg, inputs);
    }
  return compile_and_run(inputs, Signature::of(inputs, training));
}

TensorMap Compiled::replay(CompiledGraph& cg, const NamedTensors& inputs) {
  cg.last_used = compiles_ + replays_;
  // With autograd on, the forward's temporaries are dead before backward's peak, and the
  // caching allocator hands their blocks to backward; an arena would hold them idle through
  // it (bert-small 8 x 128: +10.5 MB at the peak, docs/lab4.md). So arenas serve runs
  // without autograd only.
  if (!enabled("arena") || cg.arena_off || inputs.empty() || grad_enabled())
    return cg.plan.run(inputs);
  const Device device = inputs.front().second.device();
  if (!cg.arena_planned) {  // the first replay: record what it allocates, then plan it
    AllocationRecorder recorder(device);
    TensorMap out = cg.plan.run(inputs);
    const std::vector<AllocationEvent> events = recorder.stop();
    const auto t0 = std::chrono::steady_clock::now();
    cg.allocations = plan_allocations(events);
    if (device.is_cuda()) cg.capture_allocations = plan_allocations(events, true);
    cg.arena_planned = true;
    cg.arena_seconds = seconds_since(t0);
    return out;
  }
  if (device.is_cuda() && !grad_enabled() && enabled("cuda_graph") && !cg.cuda_graph_off) {
    if (!cg.captured) {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        cg.captured = CapturedPlan::capture(cg.graph, cg.plan, cg.capture_allocations, inputs);
      } catch (const Error& e) {  // e.g. a host sync inside an op: run it uncaptured
        cg.cuda_graph_off = true;
        cg.cuda_graph_note = e.what();
      }
      cg.capture_seconds = seconds_since(t0);
    }
    if (cg.captured) {
      if (std::optional<TensorMap> out = cg.captured->replay(inputs)) {
        ++graph_launches_;
        return *out;
      }
      cg.cuda_graph_off = true;  // the prologue allocated otherwise than recorded
      cg.cuda_graph_note = "a replay's prologue left the arena plan; running uncaptured";
      cg.captured.reset();
    }
  }
  if (!cg.arena) make_arena(cg, device);
  TensorMap out;
  bool diverged = false;
  {
    Arena::Run run(*cg.arena);
    out = cg.plan.run(inputs);
    diverged = run.diverged();
  }
  ++arena_runs_;
  if (diverged) {  // correct (the allocator fell back), but the plan no longer fits this run
    ++arena_divergences_;
    cg.arena_off = true;
    cg.arena.reset();
  }
  return out;
}

void Compiled::make_arena(CompiledGraph& cg, Device device) {
  const AllocationPlan& a = cg.allocations;
  size_t held = a.arena_bytes;
  std::vector<CompiledGraph*> others;
  for (const auto& c : cache_)
    if (c.get() != &cg && c->arena) {
      held += c->arena->bytes();
      others.push_back(c.get());
    }
  std::sort(others.begin(), others.end(), [](const CompiledGraph* a, const CompiledGraph* b) {
    return a->last_used < b->last_used;
  });
  for (CompiledGraph* c : others) {  // least recently replayed first
    if (held <= options_.arena_budget_bytes) break;
    held -= c->arena->bytes();
    c->arena.reset();
  }
  // The recording run's blocks wait in the allocator's cache, and from now on the arena serves
  // every request they served: given back before the arena takes its own block, or the process
  // would hold both (bert-tiny's compiled eval: 229 MB held for a 48 MB plan).
  empty_cache(device);
  cg.arena = std::make_unique<Arena>(device, a.sizes, a.offsets, a.arena_bytes);
}

TensorMap Compiled::compile_and_run(const NamedTensors& inputs, const Signature& sig) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  double c0 = process_cpu_seconds();
  Graph traced = trace_fn_(inputs);
  auto cg = std::make_unique<CompiledGraph>(sig, std::move(traced));
  cg->first_call.trace = seconds_since(t0);
  cg->first_call.trace_cpu = process_cpu_seconds() - c0;
  cg->traced_nodes = cg->graph.size();
  Graph& g = cg->graph;
  auto run_pass = [&](const std::string& name, const std::function<std::string()>& pass) {
    if (!enabled(name)) return;
    auto t = clock::now();
    const size_t before = g.size();
    std::string report = pass();
    cg->passes.push_back({name, seconds_since(t), before, g.size(), std::move(report)});
    cg->first_call.passes += cg->passes.back().seconds;
  };
  if (!sig.training) run_pass("remove_dropout", [&] { return remove_dropout(g).str(); });
  // with autograd on the adapters need their gradients: the folded constant has none
  if (!sig.training && !grad_enabled())
    run_pass("fold_lora", [&] {
      FoldLoraReport f = fold_lora(g);
      std::string report = f.str();
      cg->lora_folds = std::move(f.folds);
      return report;
    });
  run_pass("fuse_bias_gelu", [&] { return fuse_bias_gelu(g).str(); });
  // training keeps linear and bias_gelu apart: recompute_gelu fuses bias_gelu the other way
  if (!sig.training) run_pass("fuse_linear_gelu", [&] { return fuse_linear_gelu(g).str(); });
  run_pass("fuse_add_norm", [&] { return fuse_add_norm(g).str(); });
  run_pass("fold_mxint8", [&] { return fold_mxint8(g, options_.fold_budget_bytes).str(); });
  const bool on_cpu = inputs.empty() || inputs.front().second.is_cpu();
  run_pass("narrow_cls", [&] {
    NarrowReport n = narrow_cls(g, sig.training, !on_cpu);
    cg->narrowed_nodes = n.narrowed;
    return n.str();
  });
  if (sig.training) run_pass("recompute_gelu", [&] { return recompute_gelu(g).str(); });
  run_pass("dce", [&] { return dead_code_elimination(g).str(); });
  g.lint();
  if (options_.freeze && !sig.training && on_cpu)
    run_pass("freeze_weights", [&] {
      // one table for all plans (a weight already packed for another shape is reused)
      if (!frozen_) frozen_ = std::make_shared<FrozenWeights>();
      cg->frozen = frozen_;
      return freeze_weights(g, *cg->frozen).str();
    });

  t0 = clock::now();
  cg->plan = Plan(g);
  cg->first_call.plan = seconds_since(t0);

  RecordedValues values;
  cg->memory_planned = enabled("memory_plan");
  t0 = clock::now();
  c0 = process_cpu_seconds();
  TensorMap out;
  {
    FrozenScope frozen(cg->frozen.get());
    out = cg->plan.run(inputs, cg->memory_planned ? record_values(values) : NodeHook());
  }
  cg->first_call.first_run = seconds_since(t0);
  cg->first_call.first_run_cpu = process_cpu_seconds() - c0;
  if (cg->memory_planned) {  // after the run: sizes and aliasing are what it measured
    t0 = clock::now();
    cg->memory = plan_memory(g, values);
    cg->first_call.plan += seconds_since(t0);
  }
  ++compiles_;
  last_ = cg.get();
  cache_.push_back(std::move(cg));
  // The trace ran the model op by op, eager-sized: its blocks, cached now, fit what the plan
  // no longer asks for (fused and narrowed ops, recomputed GELU). Given back, the process holds
  // what the compiled steps use (bert-tiny's compiled training: 246 MB held for a 110 MB peak).
  empty_cache(on_cpu ? Device::cpu() : inputs.front().second.device());
  return out;
}

std::string Compiled::summary() const {
  int64_t train = 0;
  FirstCallSplit sum;
  for (const auto& cg : cache_) {
    train += cg->signature.training;
    sum.trace += cg->first_call.trace;
    sum.passes += cg->first_call.passes;
    sum.plan += cg->first_call.plan;
    sum.first_run += cg->first_call.first_run;
  }
  char b[96];
  std::snprintf(b, sizeof b, "%.2f s = trace %.2f + passes %.2f + plan %.2f + first run %.2f (s)",
                sum.total(), sum.trace, sum.passes, sum.plan, sum.first_run);
  const std::string frozen =
      frozen_ ? cat("; frozen: ", frozen_->size(), " Linear weights packed once (",
                    megabytes(frozen_->bytes()), ")")
              : "";
  return cat("compile: ", cache_.size(), " plan", cache_.size() == 1 ? "" : "s", " (", train,
             " train, ", static_cast<int64_t>(cache_.size()) - train, " eval), ", replays_,
             " replays; first calls ", b, frozen);
}

Compiled compile(nn::ModulePtr root, ForwardFn forward, CompileOptions options) {
  nn::ModulePtr r = root;
  return Compiled(
      std::move(root),
      [r, forward](const NamedTensors& inputs) { return trace(r, inputs, forward); },
      std::move(options));
}

Compiled compile_bert(const std::shared_ptr<nn::BertForSequenceClassification>& model,
                      CompileOptions options) {
  MASE_CHECK(model != nullptr, ConfigError, "[compile] expected a model, got null");
  return Compiled(
      model,
      [model](const NamedTensors& inputs) {
        data::Batch batch;
        std::vector<std::string> names;
        for (const auto& [name, t] : inputs) {
          names.push_back(name);
          if (name == "input_ids") batch.input_ids = t;
          if (name == "attention_mask") batch.attention_mask = t;
          if (name == "token_type_ids") batch.token_type_ids = t;
          if (name == "labels") batch.labels = t;
        }
        return trace_bert(model, names, batch);  // ConfigError for an unknown name
      },
      std::move(options));
}

}  // namespace mase::graph

namespace mase::graph {

train::Forward compiled_forward(std::shared_ptr<Compiled> compiled) {
  MASE_CHECK(compiled != nullptr, ConfigError, "[compile] expected a compiled model, got null");
  return [compiled](const data::Batch& x) {
    NamedTensors in;
    for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"input_ids", x.input_ids},
                                  {"attention_mask", x.attention_mask},
                                  {"token_type_ids", x.token_type_ids},
                                  {"labels", x.labels}})
      if (t.defined()) in.push_back({name, t});
    TensorMap out = (*compiled)(in);
    nn::SequenceClassifierOutput r;
    r.logits = out.at("logits");
    if (auto it = out.find("loss"); it != out.end()) r.loss = it->second;
    return r;
  };
}

}  // namespace mase::graph
