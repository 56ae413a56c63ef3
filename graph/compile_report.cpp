// graph/compile_report.cpp — measuring eager vs compiled for one signature (see
// compile_report.h).
#include "graph/compile_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <tuple>

#include "models/fusion.h"
#include "models/lora.h"
#include "quant/mxint8_linear.h"
#include "runtime/allocator.h"
#include "runtime/cuda_graph.h"
#include "runtime/gpu_math.h"
#include "runtime/parallel.h"

namespace mase::graph {
namespace {

// Nodes of a compiled graph that run a fused kernel (what fuse_bias_gelu, fuse_linear_gelu and
// fuse_add_norm put in): none when those passes are off and the trace saw the unfused model.
int64_t fused_kernel_nodes(const Graph& g) {
  int64_t n = 0;
  for (const Node* node : g.nodes())
    n += node->op == OpKind::call_function &&
         (node->target == "bias_gelu" || node->target == "linear_gelu" ||
          node->target == "dropout_add_layer_norm");
  return n;
}

using Model = nn::BertForSequenceClassification;

bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape() || a.dtype() != b.dtype())
    return false;
  // compared on the host: a CUDA tensor's bytes are not addressable here
  const Tensor ca = a.detach().to(Device::cpu()).contiguous();
  const Tensor cb = b.detach().to(Device::cpu()).contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

// One step's results: logits (eval) or loss and every gradient (train).
std::vector<Tensor> results(Model& model, const TensorMap& out, bool train) {
  if (!train) return {out.at("logits").detach()};
  std::vector<Tensor> r{out.at("loss").detach()};
  // copies: the next step zeroes these gradients in place
  for (const Tensor& p : model.parameters())
    r.push_back(p.grad().defined() ? p.grad().detach().clone() : Tensor());
  return r;
}

// One step: forward (no-grad in eval) and, in train mode, backward into zeroed gradients
// (allocated once: zero_grad without set_to_none), then a wait for the device.
TensorMap step(Model& model, bool train, uint64_t seed, const std::function<TensorMap()>& fwd) {
  const Device device = model.parameters().front().device();
  if (!train) {
    NoGradGuard ng;
    TensorMap out = fwd();
    synchronize(device);
    return out;
  }
  for (const Tensor& p : model.parameters())
    if (p.grad().defined()) fill_(p.grad(), 0.0);
  manual_seed(seed);
  TensorMap out = fwd();
  backward(out.at("loss"));
  synchronize(device);
  return out;
}

// max |a - b| over the compared tensors (inf when shapes differ)
double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].defined() || !b[i].defined() || a[i].shape() != b[i].shape()) return INFINITY;
    std::vector<double> x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) d = std::max(d, std::abs(x[k] - y[k]));
  }
  return d;
}

// LoRA on the encoder's Linears, B random (U(±0.02)) so that the adapters change the output
void add_lora(Model& model, int64_t rank, uint64_t seed) {
  nn::LoraConfig lc;
  lc.rank = rank;
  lc.alpha = 2.0 * static_cast<double>(rank);
  nn::insert_lora(model, lc);
  Generator gen(seed + 101);
  for (auto& [path, p] : model.named_parameters())
    if (path.ends_with("lora_B")) uniform_(p, -0.02, 0.02, gen);
}

// (wall, CPU) seconds of f()
std::pair<double, double> seconds_of(const std::function<void()>& f) {
  const double c0 = process_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
          process_cpu_seconds() - c0};
}

// half the interquartile range, relative to the median: how far one step's time wanders
double spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double q1 = v[v.size() / 4], q3 = v[(3 * v.size()) / 4], m = v[v.size() / 2];
  return m > 0 ? (q3 - q1) / 2 / m : 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// the bytes in use at f's peak above those before it, on `device` (each device has its allocator)
size_t peak_of(Device device, const std::function<void()>& f) {
  const size_t base = allocator_stats(device).in_use_bytes;
  reset_peak_stats(device);
  f();
  const size_t peak = allocator_stats(device).peak_in_use_bytes;
  return peak > base ? peak - base : 0;
}

std::string msec(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%9.2f ms", s * 1e3);
  return b;
}

}  // namespace

CompileReport compile_report(const CompileReportOptions& o) {
  MASE_CHECK(o.repeat >= 1 && o.batch >= 1 && o.seq >= 1, ConfigError,
             "[compile_report] expected repeat, batch and seq >= 1, got ", o.repeat, ", ",
             o.batch, ", ", o.seq);
  CompileReport r;
  r.options = o;
  auto progress = [&](const auto&... what) {
    if (o.progress) std::fprintf(stderr, "compile: %s\n", cat(what...).c_str());
  };
  if (o.threads > 0) set_num_threads(o.threads);
  r.threads = num_threads();
  manual_seed(o.seed);
  const Device device = Device::parse(o.device);
  MASE_CHECK(o.precision == "fp32" || o.precision == "bf16" ||
                 (o.precision == "tf32" && device.is_cuda()),
             ConfigError, "[compile_report] expected precision fp32 or bf16 (tf32 on CUDA), got '",
             o.precision, "' on ", device.str());
  // the whole report at o.precision; after it (or a throw) the CPU's precision is what it was,
  // the GPU's fp32 (runtime/gpu_math.h has no getter to restore from)
  struct PrecisionScope {
    GemmPrecision cpu_before = cpu_gemm_precision();
    bool gpu;
    PrecisionScope(const std::string& p, bool cuda) : gpu(cuda) {
      set_cpu_gemm_precision(p == "bf16" ? GemmPrecision::bf16 : GemmPrecision::fp32);
      if (gpu) set_gpu_precision(p);
    }
    ~PrecisionScope() {
      set_cpu_gemm_precision(cpu_before);
      if (gpu) set_gpu_precision("fp32");
    }
  } precision(o.precision, device.is_cuda());
  auto model = std::make_shared<Model>(nn::BertConfig::preset(o.model, o.vocab_size));
  if (o.mxint8_weights) (void)quant::mxint8_weights(*model);
  if (o.lora_rank > 0) add_lora(*model, o.lora_rank, o.seed);
  model->to(device);
  model->train(o.train);
  const data::Batch batch =
      data::to_device(example_batch(o.batch, o.seq, o.vocab_size, o.seed), device);
  std::vector<std::string> names{"input_ids", "attention_mask"};
  if (o.train) names.push_back("labels");
  const NamedTensors inputs = bert_inputs(names, batch);
  const uint64_t seed = o.seed + 11;

  auto eager_step = [&] {
    return step(*model, o.train, seed, [&] {
      auto out = model->forward(batch.input_ids, batch.attention_mask, Tensor(),
                                o.train ? batch.labels : Tensor());
      TensorMap m{{"logits", out.logits}};
      if (o.train) m["loss"] = out.loss;
      return m;
    });
  };
  // the fusion flags are set outside the timed step (the compiled graphs do not read them)
  auto set_fused = [&](bool fused) {
    return [&, fused] { fused ? (void)nn::fuse_kernels(*model) : nn::unfuse_kernels(*model); };
  };
  // Eager's first call comes first, in a process that has run nothing yet: it pays what any
  // first step pays (fresh pages from the OS, the thread pool's start, the libraries' set-up,
  // on CUDA the context and cuBLAS's handle). The compiled first call after it then shows
  // what compiling itself costs.
  progress(o.model, " on ", device.str(), ": eager's first call");
  set_fused(true)();
  std::tie(r.eager_first_s, r.eager_first_cpu_s) = seconds_of([&] { eager_step(); });
  set_fused(false)();  // the trace must see the unfused model
  progress(o.model, " on ", device.str(), ": trace, passes and the first (compiled) run");
  CompileOptions base{o.disabled};
  base.freeze = o.freeze;
  Compiled compiled = compile_bert(model, base);
  TensorMap first_out;
  std::tie(r.compiled_first_s, r.compiled_first_cpu_s) = seconds_of([&] {
    first_out = step(*model, o.train, seed, [&] { return compiled(inputs); });
  });
  std::vector<Tensor> got = results(*model, first_out, o.train);
  const CompiledGraph& cg = compiled.last();
  r.signature = cg.signature;
  r.first_call = cg.first_call;
  r.passes = cg.passes;
  r.traced_nodes = cg.traced_nodes;
  r.compiled_nodes = cg.graph.size();
  r.memory_planned = cg.memory_planned;
  r.memory = cg.memory;

  auto nothing = [] {};
  progress("first call done; the eager run to compare with");
  set_fused(true)();
  std::vector<Tensor> want = results(*model, eager_step(), o.train);
  r.max_abs_diff = max_abs_diff(got, want);
  // not bitwise: W + s·B·A rounds once (LoRA); a frozen weight's GEMM sums in another order;
  // a Linear over B rows (narrow_cls) may sum in another order than over B·T rows; on a GPU
  // eager's MXINT8 Linear decodes inside its own GEMM, the folded one runs cuBLAS on fp32
  const bool tolerance = !cg.lora_folds.empty() || (cg.frozen && cg.frozen->size() > 0) ||
                         cg.narrowed_nodes > 0 || (device.is_cuda() && o.mxint8_weights);
  r.outputs_equal = got.size() == want.size();
  for (size_t i = 0; r.outputs_equal && i < got.size(); ++i)
    r.outputs_equal = tolerance ? r.max_abs_diff <= 1e-4 : same_bits(got[i], want[i]);
  r.compared = o.train ? cat("loss and ", got.size() - 1, " gradients") : "logits";

  auto run_compiled = [&](Compiled& c) {
    return [&] { return step(*model, o.train, seed, [&] { return c(inputs); }); };
  };
  // the variants, timed round-robin; each ablation is its own compiled model
  struct Variant {
    std::string name;
    std::function<void()> prepare;  // untimed
    std::function<TensorMap()> run;
  };
  std::vector<Variant> variants{
      {"eager reference (unfused)", set_fused(false), eager_step},
      {"eager fused (nn::fuse_kernels)", set_fused(true), eager_step},
      {"compiled", nothing, run_compiled(compiled)}};
  std::vector<std::unique_ptr<Compiled>> ablations;
  std::vector<std::string> off = {"all passes"};
  for (const PassRun& p : r.passes)  // each pass that ran (a fold only if it folded)
    if ((p.name != "fold_mxint8" && p.name != "fold_lora") || p.nodes_before != p.nodes_after)
      off.push_back(p.name);
  if (!o.train) off.push_back("arena");  // (runs with autograd have none: compile.h)
  if (device.is_cuda() && !o.train) off.push_back("cuda_graph");
  for (const std::string& p : off) {
    CompileOptions co = base;
    co.disabled.push_back("memory_plan");
    if (p == "all passes")
      co.disabled = compile_pass_names();
    else
      co.disabled.push_back(p);
    ablations.push_back(std::make_unique<Compiled>(compile_bert(model, co)));
    // An ablation traces at its first call (in the warm-up below, right after eager fused
    // ran): the model must be unfused then, or the trace records eager's fused kernels and
    // "without fuse_bias_gelu" would still run them. Replays do not read the flags.
    variants.push_back(
        {"compiled without " + p, set_fused(false), run_compiled(*ablations.back())});
  }
  auto timed = [&](const Variant& v) {
    v.prepare();
    return seconds_of([&] { v.run(); });
  };
  // warm-up: each ablation's compile, then the replay that records its allocations
  progress("warm-up of ", variants.size(), " variants (each ablation compiles once)");
  for (int k = 0; k < 2; ++k)
    for (const Variant& v : variants) timed(v);
  progress("timing ", variants.size(), " variants round-robin, ", o.repeat, " steps each");
  std::vector<std::vector<double>> wall(variants.size()), cpu(variants.size());
  for (int k = 0; k < o.repeat; ++k)
    for (size_t v = 0; v < variants.size(); ++v) {
      auto [w, c] = timed(variants[v]);
      wall[v].push_back(w);
      cpu[v].push_back(c);
    }
  for (size_t v = 0; v < variants.size(); ++v)
    r.times.push_back({variants[v].name, median(wall[v]), median(cpu[v]), spread(cpu[v])});
  r.times[2].fused_nodes = fused_kernel_nodes(compiled.last().graph);
  for (size_t a = 0; a < ablations.size(); ++a)
    r.times[3 + a].fused_nodes = fused_kernel_nodes(ablations[a]->last().graph);
  progress("peak memory, eager and compiled");
  for (size_t v : {1, 2}) {  // eager fused, compiled; the gradients exist (zeroed) already
    variants[v].prepare();
    size_t& peak = v == 1 ? r.eager_peak_bytes : r.compiled_peak_bytes;
    peak = peak_of(device, [&] { variants[v].run(); });
  }
  if (o.train) {  // what the forward leaves in use for backward: the activations autograd keeps
    auto kept = [&](const std::function<TensorMap()>& fwd) {
      manual_seed(seed);
      const size_t before = allocator_stats(device).in_use_bytes;
      TensorMap out = fwd();
      return allocator_stats(device).in_use_bytes - before;  // out (and its graph) still alive
    };
    set_fused(true)();
    r.eager_kept_bytes = kept([&] {
      auto out = model->forward(batch.input_ids, batch.attention_mask, Tensor(), batch.labels);
      return TensorMap{{"logits", out.logits}, {"loss", out.loss}};
    });
    r.compiled_kept_bytes = kept([&] { return compiled(inputs); });
  }
  const CompiledGraph& steady = compiled.last();  // its arena is reserved: count it
  if (steady.arena) r.compiled_peak_bytes += steady.arena->bytes();
  if (steady.captured) r.compiled_peak_bytes += steady.captured->arena->bytes();
  if (steady.arena_planned)
    r.arena = cat(steady.allocations.str(), "  replays served from the arena: ",
                  compiled.arena_runs(), ", diverged from the recording: ",
                  compiled.arena_divergences(), "\n");
  if (device.is_cuda() && !o.train)
    r.cuda_graph = steady.captured
                       ? cat("cuda_graph: steps ", steady.captured->prologue, " to ",
                             steady.plan.steps(), " captured as ", steady.captured->graph->kernels(),
                             " kernels (the steps before run eagerly: they read on the "
                             "host), replayed with one launch ", compiled.graph_launches(),
                             " times (capture took ", steady.capture_seconds * 1e3, " ms)\n")
                       : cat("cuda_graph: not captured: ", steady.cuda_graph_note, "\n");
  return r;
}

std::string CompileReport::csv() const {
  std::string s = "section,name,value,unit,cpu_ms,vs_eager\n";
  // an empty field where a column does not apply (a CSV reader's missing value)
  auto num = [](double v) { return std::isnan(v) ? std::string() : cat(v); };
  auto row = [&](const char* section, const std::string& name, double value, const char* unit,
                 double cpu_ms = std::nan(""), double vs = std::nan("")) {
    s += cat(section, ",\"", name, "\",", num(value), ",", unit, ",", num(cpu_ms), ",", num(vs),
             "\n");
  };
  row("first_step", "eager", 1e3 * eager_first_s, "ms", 1e3 * eager_first_cpu_s);
  row("first_step", "compiled", 1e3 * compiled_first_s, "ms", 1e3 * compiled_first_cpu_s);
  row("first_call", "trace", 1e3 * first_call.trace, "ms", 1e3 * first_call.trace_cpu);
  row("first_call", "passes", 1e3 * first_call.passes, "ms");
  row("first_call", "plan", 1e3 * first_call.plan, "ms");
  row("first_call", "first_run", 1e3 * first_call.first_run, "ms", 1e3 * first_call.first_run_cpu);
  for (const PassRun& p : passes) row("pass", p.name, 1e3 * p.seconds, "ms");
  const double eager_cpu = times.size() > 1 ? times[1].cpu_median_s : std::nan("");
  for (const TimedVariant& t : times)
    row("step", t.name, 1e3 * t.median_s, "ms", 1e3 * t.cpu_median_s, eager_cpu / t.cpu_median_s);
  row("memory", "eager peak", double(eager_peak_bytes) / 1e6, "MB");
  row("memory", "compiled peak", double(compiled_peak_bytes) / 1e6, "MB");
  return s;
}

std::string CompileReport::bought() const {
  const TimedVariant* compiled = nullptr;
  for (const TimedVariant& v : times)
    if (v.name == "compiled") compiled = &v;
  if (!compiled) return "";
  // the noise of this run: the gap between "compiled" and "compiled without dce" (the same
  // graph when dce removed nothing), and how much the compiled step's own times wander
  double same_graph = -1;
  for (const PassRun& p : passes)
    if (p.name == "dce" && p.nodes_before == p.nodes_after)
      for (const TimedVariant& v : times)
        if (v.name == "compiled without dce")
          same_graph = std::abs(v.cpu_median_s / compiled->cpu_median_s - 1);
  const double noise = std::max(same_graph, compiled->cpu_spread);
  std::string s = "what each pass bought (CPU time of the compiled step without it / with it - 1";
  s += cat("; noise ", static_cast<int>(std::lround(noise * 1000)) / 10.0, "%: ",
           same_graph >= 0 ? cat("dce changed nothing and its row differs by ",
                                 static_cast<int>(std::lround(same_graph * 1000)) / 10.0, "%, ")
                           : std::string(),
           "the compiled step's half interquartile range is ",
           static_cast<int>(std::lround(compiled->cpu_spread * 1000)) / 10.0, "%):\n");
  for (const TimedVariant& v : times) {
    const std::string prefix = "compiled without ";
    if (!v.name.starts_with(prefix) || v.name == "compiled without dce") continue;
    const double gain = v.cpu_median_s / compiled->cpu_median_s - 1;
    char line[128];
    std::snprintf(line, sizeof line, "  %-16s %+6.1f%%%s\n", v.name.substr(prefix.size()).c_str(),
                  gain * 100,
                  std::abs(gain) <= std::max(noise, v.cpu_spread) ? "  (within noise)"
                  : gain < 0                            ? "  (LOSES: turn it off with --no-pass)"
                                                        : "");
    s += line;
  }
  return s;
}

std::string CompileReport::str() const {
  const auto& o = options;
  std::string s = cat("mase-graph compile: ", o.model, o.mxint8_weights ? " (MXINT8 weights)" : "",
                      o.lora_rank > 0 ? cat(" (LoRA rank ", o.lora_rank, ")") : "", ", batch ",
                      o.batch, ", seq ", o.seq, ", ",
                      o.train ? "train (forward + backward)" : "eval (forward, no grad)", ", ",
                      o.device == "cpu" ? "CPU" : o.device, ", ", threads,
                      threads == 1 ? " thread" : " threads",
                      o.precision == "fp32" ? ""
                      : o.device == "cpu"
                          ? cat(", ", o.precision, " GEMMs: ", cpu_bf16_gemm_path())
                          : ", precision " + o.precision,
                      "\n");
  s += "signature: " + signature.str() + "\n";
  // the first step of each (eager's first in the process), against its own steady step
  auto first = [&](const char* what, double wall, double cpu, size_t steady) {
    char line[160];
    std::snprintf(line, sizeof line, "first step, %-9s %7.1f ms (CPU %.1f ms), %.1fx its steady step",
                  what, wall * 1e3, cpu * 1e3,
                  times.size() > steady ? wall / times[steady].median_s : 0.0);
    return std::string(line);
  };
  s += first("eager:", eager_first_s, eager_first_cpu_s, 1) +
       ": the process's first (pages, threads, libraries)\n";
  s += first("compiled:", compiled_first_s, compiled_first_cpu_s, 2) + ", after eager's:\n  " +
       first_call.str() +
       (o.train ? cat("\n  then backward (outside the compiled call) ",
                      std::lround((compiled_first_s - first_call.total()) * 1e4) / 10.0, " ms\n")
                : std::string("\n"));
  s += cat("passes (", traced_nodes, " traced nodes -> ", compiled_nodes, "):\n");
  for (const PassRun& p : passes) {
    char head[96];
    std::snprintf(head, sizeof head, "  %-16s %7.2f ms  %zu -> %zu nodes  ", p.name.c_str(),
                  p.seconds * 1e3, p.nodes_before, p.nodes_after);
    s += head + p.report.substr(0, p.report.find('\n')) + "\n";
  }
  if (memory_planned) s += "  " + memory.str();
  if (!arena.empty()) s += "  " + arena;
  if (!cuda_graph.empty()) s += "  " + cuda_graph;
  auto x = [](size_t a, size_t b) {  // "x0.82": a / b
    char t[16];
    std::snprintf(t, sizeof t, "x%.2f", b ? static_cast<double>(a) / static_cast<double>(b) : 0.0);
    return std::string(t);
  };
  if (o.train)
    s += "  kept for backward after the forward (allocator): eager fused " +
         megabytes(eager_kept_bytes) + ", compiled " + megabytes(compiled_kept_bytes) + " (" +
         x(compiled_kept_bytes, eager_kept_bytes) + ")\n";
  s += "  measured peak of one step above what was in use before it (allocator): eager fused " +
       megabytes(eager_peak_bytes) + ", compiled " + megabytes(compiled_peak_bytes) + " (" +
       x(compiled_peak_bytes, eager_peak_bytes) +
       (o.train ? "; gradients allocated before: activations, saved tensors, backward's "
                  "temporaries)\n"
                : ")\n");
  s += cat("steady state, median of ", o.repeat,
           " steps each (round-robin); speed-up = eager fused time / this time:\n",
           "                                           wall   speed-up         cpu   speed-up\n");
  for (const TimedVariant& v : times) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-34s%s   x%.3f   %s   x%.3f\n", v.name.c_str(),
                  msec(v.median_s).c_str(), times.at(1).median_s / v.median_s,
                  msec(v.cpu_median_s).c_str(), times.at(1).cpu_median_s / v.cpu_median_s);
    s += line;
  }
  s += bought();
  char diff[48];
  std::snprintf(diff, sizeof diff, "max |difference| %.3g", max_abs_diff);
  s += cat(outputs_equal ? "outputs equal" : "outputs DIFFER", ": compiled vs eager fused, ",
           max_abs_diff == 0 ? "bitwise" : diff, " (", compared, ")\n");
  return s;
}

}  // namespace mase::graph
