// bench/common.h — what every mase-bench suite uses: registration, rate counters, ratios to a
// baseline, validation before timing, and the named BERT shapes.
//
// A suite is one file bench/bench_<name>.cpp with one function `register_<name>()` that
// registers its benchmarks (listed in bench/main.cpp, which runs them in that order). Every
// benchmark body follows the same three steps:
//   1. build its inputs (random, seeded: the same numbers on every run),
//   2. validate the result once against an independent reference (a plain double-precision
//      loop, or spot checks for GEMMs); on a mismatch SkipWithError and return, untimed,
//   3. time the kernel in `for (auto _ : st)` and report bytes or flops per iteration.
// Figures are read as ratios to a library baseline timed in the same run: a memcpy of the
// same bytes (time_vs_memcpy), OpenBLAS sgemm 4096³ (relative_to). See docs/benchmarks.md.
//
// Read next: bench/main.cpp (flags, suites), bench/bench_elementwise.cpp (a suite).
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/bert.h"
#include "runtime/tensor.h"
#include "train/adamw.h"
#include "train/forward.h"

namespace mase::bench {

// ---- BERT shapes: the sizes the benchmarks are named after --------------------------------
// A training batch is B·T = 32·256 = 8192 token rows; each Linear is a GEMM with M = 8192.
constexpr int64_t kBatch = 32;
constexpr int64_t kSeq = 256;
constexpr int64_t kTokens = kBatch * kSeq;  // 8192
constexpr int64_t kHeadSize = 64;           // HS: every BERT config below has 64-wide heads

struct BertConfig {
  const char* name;
  int64_t hidden;  // H (C in llm.c's letters)
  int64_t heads;   // NH = H / HS
  int64_t ffn;     // intermediate size, 4H
};
inline constexpr BertConfig kBertConfigs[] = {
    {"bert-tiny", 128, 2, 512},
    {"bert-mini", 256, 4, 1024},
    {"bert-small", 512, 8, 2048},
    {"bert-base", 768, 12, 3072},
};
inline constexpr BertConfig kBertBase = kBertConfigs[3];

// ---- a BERT training step (the e2e and quant suites) ---------------------------------------
constexpr int64_t kVocab = 16000;  // our sentencepiece default

// A seeded model (manual_seed(0)), its AdamW and one fixed batch of kBatch sequences of kSeq
// tokens (every token real, so no padding).
struct BertSetup {
  std::shared_ptr<nn::BertForSequenceClassification> model;
  std::unique_ptr<train::AdamW> opt;
  Tensor ids, mask, labels;  // (B, T) i32, (B, T) i32 all ones, (B) i32
  nn::BertConfig cfg;
};
BertSetup make_bert_setup(const char* name);

// What mase-train does per batch: forward with labels (dropout on), backward,
// clip_grad_norm(1.0), AdamW step, zero_grad. Returns (loss, gradient norm before clipping).
// `forward`: the model call (train/forward.h), the eager one when empty (e2e's compiled
// variants pass graph::compiled_forward).
std::pair<double, double> bert_train_step(BertSetup& s, const train::Forward& forward = {});
// The setup's batch (ids, mask, labels) as a data::Batch, for a train::Forward.
data::Batch setup_batch(const BertSetup& s);

// ---- registration ---------------------------------------------------------------------------
using Body = std::function<void(benchmark::State&)>;

// Registers `body` as benchmark `name` ("suite/kernel/shape"), timed in wall-clock time:
// the kernels run on several threads, and CPU time would count only the calling one.
// Timing::manual: the body reports each iteration's time itself (time_vs_memcpy does).
enum class Timing { real, manual };
benchmark::internal::Benchmark* add(const std::string& name, Body body,
                                    Timing timing = Timing::real);
// How many benchmarks add has registered (0 where the selected suites all skipped themselves,
// e.g. GPU suites without a GPU): mase-bench tells a filter that matches none from that.
size_t added_count();

// ---- counters: per-iteration work turned into rates (value · iterations / seconds) ---------
// "bw" in bytes/s and "flops" in FLOP/s, printed with decimal prefixes (G = 1e9).
// Count bytes honestly: every byte the kernel must read plus every byte it writes
// (a + b reads 2N and writes N floats: 12N bytes; memcpy of N floats moves 8N bytes).
inline void set_bytes(benchmark::State& st, double bytes_per_iter) {
  st.counters["bw"] =
      benchmark::Counter(bytes_per_iter, benchmark::Counter::kIsIterationInvariantRate);
}
inline void set_flops(benchmark::State& st, double flops_per_iter) {
  st.counters["flops"] =
      benchmark::Counter(flops_per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- memory-bound kernels: timed next to a memcpy of the same bytes -----------------------
// Runs the benchmark loop over `kernel` (one call per iteration) and, right after every call,
// a memcpy whose reads plus writes total the same `bytes`, on the same threads, which the loop
// does not time. Reports
//   bw         the kernel's bytes/s       memcpy_bw  the copy's bytes/s, measured alongside
//   vs_memcpy  bw / memcpy_bw: 1.0 = as fast as copying the same bytes
// Why pair them call by call: on a shared machine the load drifts by 2x within a minute, and
// a ratio of two benchmarks run a minute apart measures the drift; here both halves of each
// ratio see the same moment's load. Register the body with add(name, body, Timing::manual).
// `also`: more baselines to pair with each call, after the memcpy (see time_paired below), e.g.
// {{naive, "vs_naive"}}: a fused kernel's speedup over its reference at the same moments.
struct Baseline {
  std::function<void()> run;
  std::string ratio;  // counter name: time(run) / time(kernel)
};
void time_vs_memcpy(benchmark::State& st, int64_t bytes, const std::function<void()>& kernel,
                    const std::vector<Baseline>& also = {});

// The general form of that pairing: the loop over `kernel` (whose time is the benchmark's;
// register with Timing::manual) runs `baseline` right after every call, untimed by the loop,
// and sets counter `ratio` = time(baseline) / time(kernel) — e.g. the speedup of a fused
// kernel over the composition it replaces, both halves measured at the same moments.
// Returns the seconds spent in `baseline` in all (for its own rate).
double time_paired(benchmark::State& st, const std::function<void()>& kernel,
                   const std::function<void()>& baseline, const std::string& ratio);
// The same with several baselines, each run after every call in turn; returns their seconds.
std::vector<double> time_paired(benchmark::State& st, const std::function<void()>& kernel,
                                const std::vector<Baseline>& baselines);

// ---- ratios to a baseline benchmark ---------------------------------------------------------
// Benchmark `name` gets a counter `counter` = its rate / the rate of benchmark `baseline`
// (its "bw", or "flops" when it has no "bw"), computed by the reporter (bench/report.h) when
// both ran in this invocation. Repeated runs compare like with like: the median with the
// median, the mean with the mean. (For kernels that take seconds, where pairing call by call
// as time_vs_memcpy does would double a long run.)
void relative_to(const std::string& name, const std::string& baseline, const std::string& counter);

struct Relation {
  std::string baseline, counter;
};
const Relation* relation_of(const std::string& name);  // nullptr when `name` has no baseline

// ---- validation, once per benchmark, before timing ----------------------------------------
// Calls `check` the first time benchmark `name` runs (not again on later repetitions); `check`
// returns "" when the result is right, else what is wrong. On a mismatch (now or remembered
// from the first run) calls st.SkipWithError and returns false: the body must return untimed.
bool validate_once(benchmark::State& st, const std::string& name,
                   const std::function<std::string()>& check);

// "" when every got[i] is within atol + rtol·|want[i]|, else the first element that is not.
std::string compare(const Tensor& got, const std::vector<double>& want, double atol, double rtol);

// Seeded inputs (Philox): the same values on every run, whatever the thread count.
Tensor uniform_tensor(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0);
Tensor normal_tensor(const Shape& shape, uint64_t seed);

// "8192x768"
std::string shape_name(const Shape& shape);

}  // namespace mase::bench
