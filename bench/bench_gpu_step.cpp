// bench/bench_gpu_step.cpp — the gpu-step suite: one BERT training step on the GPU, timed and
// profiled, in the variants that measure each change of issue 23 side by side.
//
//   gpu-step/<model>/<variant>    model: bert-tiny, bert-small, bert-base (B 32, T 256, V 16000,
//                                 every token real, dropout on, clip 1.0, AdamW lr 1e-4)
// The step is train::train_step (train/train_step.h), the very function mase-train runs.
// Variants (environment switches read by the code at each call, so one process runs them all):
//   before   the step as it was: batched GEMMs as loops of single GEMMs (MASE_GEMM_BATCHED=loop),
//            gradient norm summed on the host (MASE_CLIP=host), one AdamW launch per parameter
//            (MASE_ADAMW=per-tensor), so the host reads loss and norm in the middle of the step
//   fp32     strided/pointer-batched GEMMs, clip and AdamW as multi-tensor kernels gated on
//            the device, one host sync per step (the readback)
//   tf32     fp32 with cuBLAS's TF32 tensor-core math (runtime/kernels/matmul.h), attention on
//            the TF32 tensor cores (SdpaMath::tf32), as --precision tf32 sets them
//   bf16     GEMM inputs rounded to bf16, fp32 accumulation (cuda/matmul_bf16.cu), attention on
//            the TF32 tensor cores, as --precision bf16 sets them (runtime/gpu_math.h)
//   tf32-fma-attn, bf16-fma-attn   the same with attention on the CUDA cores (SdpaMath::fp32,
//            what both precisions ran before; MASE_SDPA_MATH=fp32 selects it in mase-train)
//   fp32-graphs, tf32-graphs, bf16-graphs   the same step captured as a CUDA graph and replayed
//            (train/graph_step.h): counters capture_ms (the first captured step: capture,
//            instantiation, replay) and kernels (the launches one replay stands for)
// Timing: each iteration is host wall time from the step's start to the GPU's end of it (an
// event waited on), as PyTorch's side (bench/torch_e2e.py) is timed: sync, step, sync.
// Counters: step_ms-equivalent time, tokens_per_s, flops (model FLOPs as bench_e2e.cpp counts
// them), and from the profiler (runtime/profiler.h) span_ms, busy_ms, idle_ms, host_ms, syncs,
// os_allocs per step. The profile table — per phase and per op class — is printed to stderr
// once per benchmark and appended to the file named by MASE_PROFILE_OUT, if set
// (scripts/gpu/step.sh collects it for docs/performance.md).
//
// Read next: runtime/profiler.h, train/train_step.h, docs/performance.md ("On a GPU").
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

#include "bench/gpu_common.h"
#include "models/fusion.h"
#include "runtime/allocator.h"
#include "runtime/cuda_graph.h"
#include "runtime/kernels/gpu_timing.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sdpa.h"
#include "runtime/profiler.h"
#include "runtime/random.h"
#include "train/graph_step.h"
#include "train/train_step.h"

namespace mase::bench {
namespace gpu_step_suite {

struct Variant {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;  // set for the benchmark's duration
  GemmPrecision precision;
  bool graphs = false;
  SdpaMath attention = precision == GemmPrecision::fp32 ? SdpaMath::fp32 : SdpaMath::tf32;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"before", {{"MASE_GEMM_BATCHED", "loop"}, {"MASE_CLIP", "host"}, {"MASE_ADAMW", "per-tensor"}},
       GemmPrecision::fp32},
      {"fp32", {}, GemmPrecision::fp32},
      {"tf32", {}, GemmPrecision::tf32},
      {"bf16", {}, GemmPrecision::bf16},
      {"tf32-fma-attn", {}, GemmPrecision::tf32, false, SdpaMath::fp32},
      {"bf16-fma-attn", {}, GemmPrecision::bf16, false, SdpaMath::fp32},
      {"fp32-graphs", {}, GemmPrecision::fp32, true},
      {"tf32-graphs", {}, GemmPrecision::tf32, true},
      {"bf16-graphs", {}, GemmPrecision::bf16, true},
  };
  return v;
}

// Sets a variant's switches, precision and attention arithmetic, and puts everything back on
// scope exit.
struct VariantScope {
  explicit VariantScope(const Variant& v)
      : prev_(cuda::gemm_precision()), prev_attention_(sdpa_cuda_math()) {
    for (const auto& [k, val] : v.env) setenv(k, val, 1);
    for (const auto& [k, val] : v.env) names_.push_back(k);
    cuda::set_gemm_precision(v.precision);
    sdpa_cuda_math() = v.attention;
  }
  ~VariantScope() {
    for (const char* k : names_) unsetenv(k);
    sdpa_cuda_math() = prev_attention_;
    try {
      cuda::set_gemm_precision(prev_);
    } catch (...) {
    }
  }
  std::vector<const char*> names_;
  GemmPrecision prev_;
  SdpaMath prev_attention_;
};

struct GpuStep {
  nn::BertConfig cfg;
  std::shared_ptr<nn::BertForSequenceClassification> model;
  std::unique_ptr<train::AdamW> opt;
  data::Batch batch;  // on the CPU: each step copies it to the GPU (phase "data")
  Tensor clip_state;
  std::unique_ptr<train::GraphStep> graph;  // the graphs variants

  GpuStep(const char* name, bool graphs) {
    cfg = nn::BertConfig::preset(name, kVocab);
    manual_seed(0);
    model = std::make_shared<nn::BertForSequenceClassification>(cfg);
    nn::fuse_kernels(*model);  // as mase-train runs it (models/fusion.h)
    model->to(Device::cuda());
    opt = std::make_unique<train::AdamW>(model->named_parameters(),
                                         train::AdamWOptions{.lr = 1e-4, .weight_decay = 0.01});
    std::vector<int32_t> ids(kTokens), labels(kBatch);
    for (int64_t i = 0; i < kTokens; ++i)  // ids in [1, V): 0 is [PAD]; as make_bert_setup
      ids[i] = 1 + static_cast<int32_t>(philox_word(7, 0, i) % (kVocab - 1));
    for (int64_t b = 0; b < kBatch; ++b) labels[b] = static_cast<int32_t>(philox_word(7, 1, b) & 1);
    batch.input_ids = Tensor::from(ids, {kBatch, kSeq});
    batch.attention_mask = Tensor::ones({kBatch, kSeq}, DType::i32);
    batch.token_type_ids = Tensor::zeros({kBatch, kSeq}, DType::i32);
    batch.labels = Tensor::from(labels, {kBatch});
    batch.real_tokens = kTokens;
    model->train();
    if (graphs) graph = std::make_unique<train::GraphStep>(*model, *opt, Device::cuda(), 1.0);
  }
  train::StepResult step() {
    if (graph) return graph->step(batch);
    return train::train_step(*model, *opt, batch, Device::cuda(), 1.0, clip_state);
  }
};

double model_flops(const GpuStep& s) {  // training: 6·N + 12·L·T·H per token (bench_e2e.cpp)
  double n = 0;
  for (const auto& [path, p] : s.model->named_parameters())
    if (path.rfind("bert.encoder.", 0) == 0) n += static_cast<double>(p.numel());
  return (6.0 * n + 12.0 * double(s.cfg.num_hidden_layers) * kSeq * double(s.cfg.hidden_size)) *
         kTokens;
}

// Host wall ms of one step, to the GPU's end of it.
double timed_step(GpuStep& s, void* done) {
  const auto t0 = std::chrono::steady_clock::now();
  s.step();
  cuda::event_record(done);
  cuda::event_elapsed_ms(done, done);  // waits for the event: the step's last kernel is done
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Kernel launches of one uncaptured step: capture it into a throwaway graph (nothing runs)
// and count the graph's kernels. -1 where the step cannot be captured (the before variant
// waits for the GPU mid-step). The capture leaves no trace: AdamW counts no step under
// capture, the dropout generator is put back, the gradients are dropped.
int64_t count_launches(GpuStep& s) {
  if (s.graph || !s.opt->step_is_gated()) return -1;
  const data::Batch x = data::to_device(s.batch, Device::cuda());
  const Generator saved = default_generator();
  int64_t kernels = -1;
  try {
    CudaGraph g(Device::cuda());
    g.capture([&] { train::device_step_work(*s.model, *s.opt, x, 1.0, s.clip_state); });
    kernels = g.kernels();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-step: the step could not be captured to count its kernels: %s\n",
                 e.what());
  }
  default_generator() = saved;
  s.opt->zero_grad();
  return kernels;
}

void write_table(const std::string& table) {
  std::fprintf(stderr, "\n%s\n", table.c_str());
  if (const char* out = std::getenv("MASE_PROFILE_OUT")) {
    std::ofstream f(out, std::ios::app);
    f << table << "\n";
  }
}

// One benchmark's body (add_step wraps it: an exception skips this benchmark, not the run).
void run_step(benchmark::State& st, const std::string& name, const char* model, const Variant& v) {
    VariantScope scope(v);
    GpuStep s(model, v.graphs);
    const bool ok = validate_once(st, name, [&]() -> std::string {
      const train::StepResult r = s.step();  // the seeded model's first step
      if (!(std::abs(r.loss - std::log(2.0)) < 0.05))
        return cat("first loss ", r.loss, ", expected ln 2 = 0.693 ± 0.05");
      if (!(r.grad_norm > 0 && std::isfinite(r.grad_norm))) return cat("gradient norm ", r.grad_norm);
      return "";
    });
    if (!ok) return;
    void* done = cuda::event_create();
    // warm up: gradients, AdamW state, caches; with graphs, the last of these is the capture
    double first_ms = 0;
    for (int i = 0; i < 3 || (s.graph && s.graph->stats().replays < 2); ++i) {
      const int64_t captures = s.graph ? s.graph->stats().captures : 0;
      const double ms = timed_step(s, done);
      if (s.graph && s.graph->stats().captures != captures) first_ms = ms;  // the captured step
      if (i > 10) break;
    }

    // the profile: unprofiled steps, profiled steps, held steps (runtime/profiler.h)
    profile::ProfileSummary sum;
    sum.title = cat(name, " (B ", kBatch, ", T ", kSeq, ", V ", kVocab, ")");
    for (int i = 0; i < 5; ++i) {
      sum.wall_ms_sum += timed_step(s, done);
      ++sum.wall_steps;
    }
    const double wall_ms = sum.wall_ms_sum / double(sum.wall_steps);
    profile::Profiler prof(profile::gpu_timeline());
    const AllocatorStats a0 = allocator_stats(Device::cuda());
    for (int i = 0; i < 3; ++i) {
      prof.begin_step();
      s.step();
      sum.add(prof.end_step());
    }
    sum.os_allocs = allocator_stats(Device::cuda()).os_allocs - a0.os_allocs;
    sum.launches = s.graph ? s.graph->stats().kernels : count_launches(s);
    // held: the GPU waits long enough for the host to queue the whole step behind it
    const double hold_ms = std::max(50.0, 3.0 * wall_ms);
    for (int i = 0; i < 2; ++i) {
      prof.begin_step(hold_ms);
      s.step();
      sum.add_held(prof.end_step());
    }
    write_table(sum.table());

    for (auto _ : st) st.SetIterationTime(timed_step(s, done) * 1e-3);
    cuda::event_destroy(done);
    const double n = double(sum.steps), nh = double(std::max<int64_t>(sum.held_steps, 1));
    st.counters["tokens_per_s"] =
        benchmark::Counter(double(kTokens), benchmark::Counter::kIsIterationInvariantRate);
    set_flops(st, model_flops(s));
    st.counters["span_ms"] = sum.sum.span_ms / n;
    st.counters["busy_ms"] = sum.held_sum.span_ms / nh;
    st.counters["idle_ms"] = sum.sum.span_ms / n - sum.held_sum.span_ms / nh;
    st.counters["host_ms"] = sum.sum.host_ms / n;
    st.counters["syncs"] = double(sum.sum.host_syncs) / n;
    st.counters["os_allocs"] = double(sum.os_allocs) / n;
    if (sum.launches >= 0) st.counters["kernels"] = double(sum.launches);
    if (s.graph) {
      st.counters["capture_ms"] = first_ms;  // the step that was captured, then replayed
      if (s.graph->stats().captures != 1)
        st.SkipWithError(cat("expected 1 capture, got ", s.graph->stats().captures, " (",
                             s.graph->stats().capture_error, ")").c_str());
    }
    st.SetLabel(cat(model, " ", v.name));
}

void add_step(const char* model, const Variant& v) {
  const std::string name = cat("gpu-step/", model, "/", v.name);
  add(name, [name, model, &v](benchmark::State& st) {
    try {
      run_step(st, name, model, v);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
      st.SkipWithError(cat("failed: ", e.what()).c_str());
    }
  }, Timing::manual)->Iterations(5);
}

}  // namespace gpu_step_suite

void register_gpu_step() {
  using namespace gpu_step_suite;
  if (!gpu_suite_available("gpu-step")) return;
  for (const char* model : {"bert-tiny", "bert-small", "bert-base"})
    for (const Variant& v : variants()) add_step(model, v);
}

}  // namespace mase::bench
