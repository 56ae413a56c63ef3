// graph/compile_report.cpp — measuring eager vs compiled for one signature (see
// compile_report.h).
#include "graph/compile_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <functional>

#include "models/fusion.h"
#include "quant/mxint8_linear.h"
#include "runtime/allocator.h"
#include "runtime/parallel.h"

namespace mase::graph {
namespace {

using Model = nn::BertForSequenceClassification;

bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape() || a.dtype() != b.dtype())
    return false;
  Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

// One step's results: logits (eval) or loss and every gradient (train).
std::vector<Tensor> results(Model& model, const TensorMap& out, bool train) {
  if (!train) return {out.at("logits").detach()};
  std::vector<Tensor> r{out.at("loss").detach()};
  for (const Tensor& p : model.parameters()) r.push_back(p.grad());
  return r;
}

// One step: forward (no-grad in eval) and, in train mode, backward from fresh gradients.
TensorMap step(Model& model, bool train, uint64_t seed, const std::function<TensorMap()>& fwd) {
  if (!train) {
    NoGradGuard ng;
    return fwd();
  }
  for (const Tensor& p : model.parameters()) p.set_grad(Tensor());
  manual_seed(seed);
  TensorMap out = fwd();
  backward(out.at("loss"));
  return out;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// (wall, CPU) seconds of f()
std::pair<double, double> seconds_of(const std::function<void()>& f) {
  const double c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
          cpu_seconds() - c0};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

size_t peak_of(const std::function<void()>& f) {
  const size_t base = allocator_stats().in_use_bytes;
  reset_peak_stats();
  f();
  const size_t peak = allocator_stats().peak_in_use_bytes;
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
  if (o.threads > 0) set_num_threads(o.threads);
  r.threads = num_threads();
  manual_seed(o.seed);
  auto model = std::make_shared<Model>(nn::BertConfig::preset(o.model, o.vocab_size));
  if (o.mxint8_weights) (void)quant::mxint8_weights(*model);
  model->train(o.train);
  const data::Batch batch = example_batch(o.batch, o.seq, o.vocab_size, o.seed);
  std::vector<std::string> names{"input_ids", "attention_mask"};
  if (o.train) names.push_back("labels");
  const NamedTensors inputs = bert_inputs(names, batch);
  const uint64_t seed = o.seed + 11;

  // compile first: the trace must see the unfused model
  Compiled compiled = compile_bert(model, {o.disabled});
  std::vector<Tensor> got = results(*model, step(*model, o.train, seed, [&] {
    return compiled(inputs);
  }), o.train);
  const CompiledGraph& cg = compiled.last();
  r.signature = cg.signature;
  r.first_call = cg.first_call;
  r.passes = cg.passes;
  r.traced_nodes = cg.traced_nodes;
  r.compiled_nodes = cg.graph.size();
  r.memory_planned = cg.memory_planned;
  r.memory = cg.memory;

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
  auto nothing = [] {};
  set_fused(true)();
  std::vector<Tensor> want = results(*model, eager_step(), o.train);
  r.outputs_equal = got.size() == want.size();
  for (size_t i = 0; r.outputs_equal && i < got.size(); ++i)
    r.outputs_equal = same_bits(got[i], want[i]);
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
  for (const PassRun& p : r.passes)  // each pass that ran (fold_mxint8 only if it folded)
    if (p.name != "fold_mxint8" || p.nodes_before != p.nodes_after) off.push_back(p.name);
  for (const std::string& p : off) {
    CompileOptions co{o.disabled};
    co.disabled.push_back("memory_plan");
    if (p == "all passes")
      co.disabled = compile_pass_names();
    else
      co.disabled.push_back(p);
    ablations.push_back(std::make_unique<Compiled>(compile_bert(model, co)));
    variants.push_back({"compiled without " + p, nothing, run_compiled(*ablations.back())});
  }
  auto timed = [&](const Variant& v) {
    v.prepare();
    return seconds_of([&] { v.run(); });
  };
  for (const Variant& v : variants) timed(v);  // warm-up (and each ablation's compile)
  std::vector<std::vector<double>> wall(variants.size()), cpu(variants.size());
  for (int k = 0; k < o.repeat; ++k)
    for (size_t v = 0; v < variants.size(); ++v) {
      auto [w, c] = timed(variants[v]);
      wall[v].push_back(w);
      cpu[v].push_back(c);
    }
  for (size_t v = 0; v < variants.size(); ++v)
    r.times.push_back({variants[v].name, median(wall[v]), median(cpu[v])});
  for (size_t v : {1, 2}) {  // eager fused, compiled
    variants[v].prepare();
    for (const Tensor& p : model->parameters()) p.set_grad(Tensor());  // counted in the peak
    (v == 1 ? r.eager_peak_bytes : r.compiled_peak_bytes) = peak_of([&] { variants[v].run(); });
  }
  return r;
}

std::string CompileReport::bought() const {
  const TimedVariant* compiled = nullptr;
  for (const TimedVariant& v : times)
    if (v.name == "compiled") compiled = &v;
  if (!compiled) return "";
  // dce on a fresh trace removes nothing: "compiled without dce" is the same graph, so the
  // gap between the two is this run's noise
  double noise = -1;
  for (const PassRun& p : passes)
    if (p.name == "dce" && p.nodes_before == p.nodes_after)
      for (const TimedVariant& v : times)
        if (v.name == "compiled without dce")
          noise = std::abs(v.cpu_median_s / compiled->cpu_median_s - 1);
  std::string s = "what each pass bought (CPU time of the compiled step without it / with it - 1";
  s += noise >= 0 ? cat("; noise: dce changed nothing, and its row differs by ",
                        static_cast<int>(std::lround(noise * 1000)) / 10.0, "%):\n")
                  : std::string("):\n");
  for (const TimedVariant& v : times) {
    const std::string prefix = "compiled without ";
    if (!v.name.starts_with(prefix) || v.name == "compiled without dce") continue;
    const double gain = v.cpu_median_s / compiled->cpu_median_s - 1;
    char line[128];
    std::snprintf(line, sizeof line, "  %-16s %+6.1f%%%s\n", v.name.substr(prefix.size()).c_str(),
                  gain * 100,
                  noise >= 0 && std::abs(gain) <= noise ? "  (within noise)"
                  : gain < 0                            ? "  (LOSES: turn it off with --no-pass)"
                                                        : "");
    s += line;
  }
  return s;
}

std::string CompileReport::str() const {
  const auto& o = options;
  std::string s = cat("mase-graph compile: ", o.model, o.mxint8_weights ? " (MXINT8 weights)" : "",
                      ", batch ", o.batch, ", seq ", o.seq, ", ",
                      o.train ? "train (forward + backward)" : "eval (forward, no grad)", ", CPU, ",
                      threads, " threads\n");
  s += "signature: " + signature.str() + "\n" + first_call.str() + "\n";
  s += cat("passes (", traced_nodes, " traced nodes -> ", compiled_nodes, "):\n");
  for (const PassRun& p : passes) {
    char head[96];
    std::snprintf(head, sizeof head, "  %-15s %7.2f ms  %zu -> %zu nodes  ", p.name.c_str(),
                  p.seconds * 1e3, p.nodes_before, p.nodes_after);
    s += head + p.report.substr(0, p.report.find('\n')) + "\n";
  }
  if (memory_planned)
    s += "  " + memory.str() + "  measured peak of one step (allocator): eager fused " +
         megabytes(eager_peak_bytes) + ", compiled " + megabytes(compiled_peak_bytes) +
         (o.train ? " (forward + backward: the plan covers forward values only)" : "") +
         "\n  (the plan is an analysis: the ops allocate their own outputs)\n";
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
  s += cat(outputs_equal ? "outputs equal" : "outputs DIFFER",
           ": compiled vs eager fused, bitwise (", compared, ")\n");
  return s;
}

}  // namespace mase::graph
