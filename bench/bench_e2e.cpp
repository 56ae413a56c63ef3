// bench/bench_e2e.cpp — the e2e suite: whole BERT training and evaluation steps, the figure
// every kernel optimisation is for.
//
// For bert-tiny, bert-mini and bert-small at fixed shapes (batch 32, seq 256: kTokens = 8192
// token rows; vocab 16000, our sentencepiece default; every token real, so no padding):
//   e2e/<model>/train   forward with labels (dropout on), backward, clip_grad_norm(1.0),
//                       AdamW step, zero_grad — what mase-train does per batch
//   e2e/<model>/eval    forward under NoGradGuard in eval mode (dropout off), logits only
//   e2e/<model>/eval/frozen   (also with --compile) compiled with CompileOptions::freeze:
//                       each Linear weight packed once (graph/passes/freeze_weights.h);
//                       validated: logits within 1e-4 of eager fused eval's
//   e2e/<model>/train/compiled, e2e/<model>/eval/compiled   (mase-bench --e2e --compile)
//                       the same steps through graph::compile (graph/compile.h): the model is
//                       traced unfused, the passes fuse on the graph, the plan is replayed;
//                       registered right after their eager twin, so one run has both.
//                       first_call_ms: the compile's first call (trace + passes + plan + first
//                       run), made in the untimed warm-up. Validated: the first step's loss and
//                       gradient norm equal the eager fused step's, bit for bit.
// Counters:
//   tokens_per_s   kTokens / step time
//   flops          model FLOP/s, counted (not measured) as in Kaplan et al. 2020 / PaLM:
//                  training 6·N·tokens + 12·L·T·H per token (N = the parameters of the encoder
//                  layers; the attention products q·kᵀ and p·v are 4·T·H per token and layer
//                  forward, ×3 with the backward); evaluation a third of that.
//                  Embeddings (lookups), the pooler and the classifier (one row per sequence,
//                  not per token: 2% of bert-small's N) are not counted.
//   sgemm_flops    OpenBLAS sgemm 4096³ FLOP/s, timed right after every step on the same
//                  threads (as time_vs_memcpy pairs a memcpy with each memory-bound kernel:
//                  on a shared machine both halves of the ratio see the same moment's load)
//   vs_sgemm       flops / sgemm_flops: the share of the machine's GEMM speed the model gets
//   peak_MB        the allocator's peak bytes in use during the timed steps (parameters,
//                  gradients, AdamW state, activations, workspaces; runtime/allocator.h)
//   held_MB        bytes the caching allocator holds from the OS (in use + cached) at its peak
//   os_allocs      blocks obtained from the OS during the timed steps: 0 in steady state
//                  (two untimed warm-up steps create the gradients, AdamW state and the
//                  allocator's cache first). A non-zero count fails the benchmark.
//   faults         minor page faults per step (getrusage): first touches of fresh memory,
//                  which a steady state served from the allocator's cache does not make
//   cpu_util       CPU seconds of the whole process (every thread) / (wall seconds × threads)
//                  during the steps: 1.0 = every core busy. On a shared machine, below 1
//                  means the step waited for cores — read vs_sgemm, which pairs each step
//                  with a GEMM taken under the same load, rather than the raw rates.
//   vs_sgemm_cpu   the same ratio in CPU time: (model FLOPs / CPU seconds of the steps) /
//                  (sgemm FLOPs / CPU seconds of the sgemms). Time slices lost to other
//                  processes are not CPU time, so on a crowded machine this is the steadier
//                  estimate of what an idle one would show; it counts a thread that spins
//                  waiting for work as busy, so it is never flattering.
// Validated once before timing: the first step's loss is ln 2 ± 0.05 (initial logits are
// ~0: the classifier's weights are N(0, 0.02²)), the gradient norm is finite and non-zero,
// and the fused step (models/fusion.h) gives the loss and gradient norm of the reference
// composition of ops (fusions off) to 1e-4 relative.
//
// The model, its batch and the training step are bench/common.h's (make_bert_setup,
// bert_train_step), shared with the quant suite's QAT step.
//
// Read next: models/bert.h (the model), train/adamw.h, docs/performance.md (the figures).
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "bench/common.h"
#include "graph/compile.h"
#include "models/bert.h"
#include "models/fusion.h"
#include "runtime/allocator.h"
#include "runtime/cpu/blas.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"

namespace mase::bench {
namespace e2e_suite {

constexpr int64_t kSgemmN = 4096;

bool g_compiled = false;  // mase-bench --compile: register the compiled variants too

void eval_step(BertSetup& s, const train::Forward& forward) {
  NoGradGuard no_grad;
  s.model->eval();
  data::Batch b = setup_batch(s);
  b.labels = Tensor();  // logits only
  Tensor logits = forward ? forward(b).logits : s.model->forward(s.ids, s.mask).logits;
  benchmark::DoNotOptimize(logits.raw_data());
}

// A compiled forward of the setup's model: the fusion flags off first (the trace must see the
// unfused model; the passes fuse on the graph), the Compiled kept by the returned function.
// frozen: CompileOptions::freeze (the eval/frozen variant: Linear weights packed once).
train::Forward compiled_forward_of(BertSetup& s, std::shared_ptr<graph::Compiled>& keep,
                                   bool frozen = false) {
  nn::unfuse_kernels(*s.model);
  graph::CompileOptions options;
  options.freeze = frozen;
  keep = std::make_shared<graph::Compiled>(graph::compile_bert(s.model, options));
  return graph::compiled_forward(keep);
}

// The frozen variant's validation: its logits equal eager fused eval's within fp32
// reassociation (oneDNN's packed-weight kernel sums in another order), and the plan did run
// packed weights (a build without oneDNN has none to measure).
std::string check_frozen_eval(const char* name) {
  BertSetup s = make_bert_setup(name);
  std::shared_ptr<graph::Compiled> keep;
  NoGradGuard no_grad;
  s.model->eval();
  const train::Forward f = compiled_forward_of(s, keep, true);
  data::Batch b = setup_batch(s);
  b.labels = Tensor();
  const Tensor got = f(b).logits;
  if (!keep->last().frozen || keep->last().frozen->size() == 0)
    return "no weight was packed (oneDNN absent or turned off)";
  nn::fuse_kernels(*s.model);
  const Tensor want = s.model->forward(s.ids, s.mask).logits;
  const Tensor g = got.contiguous(), w = want.contiguous();
  double diff = 0;
  for (int64_t i = 0; i < g.numel(); ++i)
    diff = std::max(diff, double(std::abs(g.data<float>()[i] - w.data<float>()[i])));
  if (!(diff <= 1e-4)) return cat("frozen logits differ from eager's by ", diff, " (expected <= 1e-4)");
  return "";
}

// CPU seconds (user + system, every thread) and minor page faults of the process so far.
struct Usage {
  double cpu_s;
  long faults;
};
Usage usage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return {sec(ru.ru_utime) + sec(ru.ru_stime), ru.ru_minflt};
}

// Model FLOPs of one step (see the file comment).
double model_flops(const BertSetup& s, bool training) {
  double n = 0;
  for (const auto& [path, p] : s.model->named_parameters())
    if (path.rfind("bert.encoder.", 0) == 0) n += static_cast<double>(p.numel());
  const double L = static_cast<double>(s.cfg.num_hidden_layers);
  const double H = static_cast<double>(s.cfg.hidden_size);
  const double per_token = 6.0 * n + 12.0 * L * kSeq * H;
  return per_token * kTokens / (training ? 1.0 : 3.0);
}

// Validation: the first step from the seeded model, against ln 2 and the unfused reference.
std::string check_first_step(const char* name) {
  double loss[2], norm[2];
  for (int fused = 0; fused < 2; ++fused) {
    BertSetup s = make_bert_setup(name);  // same seed: same weights, same dropout masks
    if (!fused) nn::unfuse_kernels(*s.model);
    std::tie(loss[fused], norm[fused]) = bert_train_step(s);
  }
  if (!(std::abs(loss[1] - std::log(2.0)) < 0.05))
    return cat("first loss ", loss[1], ", expected ln 2 = 0.693 ± 0.05");
  if (!(norm[1] > 0 && std::isfinite(norm[1]))) return cat("gradient norm ", norm[1]);
  if (!(std::abs(loss[1] - loss[0]) <= 1e-4 * std::abs(loss[0])))
    return cat("fused loss ", loss[1], " vs reference ", loss[0]);
  if (!(std::abs(norm[1] - norm[0]) <= 1e-4 * norm[0]))
    return cat("fused gradient norm ", norm[1], " vs reference ", norm[0]);
  return "";
}

// The compiled variant's validation: its first step equals the eager fused one within fp32
// reassociation (bit for bit but for narrow_cls, whose last layer sums its Linears over fewer
// rows: graph/passes/narrow_cls.h).
std::string check_compiled_first_step(const char* name) {
  BertSetup e = make_bert_setup(name);  // seeded: weights, then the step's dropout masks
  const auto [loss_e, norm_e] = bert_train_step(e);
  BertSetup c = make_bert_setup(name);  // the same seed again: the same weights and masks
  std::shared_ptr<graph::Compiled> keep;
  const train::Forward f = compiled_forward_of(c, keep);
  const auto [loss_c, norm_c] = bert_train_step(c, f);
  auto close = [](double a, double b) { return std::abs(a - b) <= 1e-5 * std::abs(b); };
  if (!close(loss_c, loss_e) || !close(norm_c, norm_e))
    return cat("compiled loss ", loss_c, " and norm ", norm_c, " vs eager fused ", loss_e, " and ",
               norm_e, " (expected equal within 1e-5)");
  return "";
}

// frozen (eval only): compiled with CompileOptions::freeze
void add_step(const char* model, bool training, bool compiled, bool frozen = false) {
  const std::string name = cat("e2e/", model, training ? "/train" : "/eval",
                               frozen ? "/frozen" : compiled ? "/compiled" : "");
  add(name, [name, model, training, compiled, frozen](benchmark::State& st) {
    using Clock = std::chrono::steady_clock;
    if (!validate_once(st, name, [&] {
          return frozen     ? check_frozen_eval(model)
                 : compiled ? check_compiled_first_step(model)
                            : check_first_step(model);
        }))
      return;
    // the validation's training steps left their buffers in the allocator's cache: given back,
    // so that held_MB is this benchmark's own (an eval's would read a training step's otherwise)
    empty_cache();
    BertSetup s = make_bert_setup(model);
    std::shared_ptr<graph::Compiled> keep;
    const train::Forward forward =
        compiled ? compiled_forward_of(s, keep, frozen) : train::Forward();
    // the yardstick's operands live outside the caching allocator: not in the memory figures
    std::vector<float> A(kSgemmN * kSgemmN, 0.5f), B(kSgemmN * kSgemmN, 0.25f), C(kSgemmN * kSgemmN);
    auto step = [&] {
      if (training) bert_train_step(s, forward);
      else eval_step(s, forward);
    };
    // warm up: gradients, AdamW state, allocator cache; compiled eval also makes its arena on
    // the third call (the first compiles, the second records the allocations)
    for (int i = 0; i < (compiled ? 3 : 2); ++i) step();
    if (keep) st.counters["first_call_ms"] = keep->last().first_call.total() * 1e3;
    reset_peak_stats();
    const AllocatorStats before = allocator_stats();
    double step_s = 0, sgemm_s = 0, cpu_s = 0, sgemm_cpu_s = 0;
    long faults = 0;
    for (auto _ : st) {
      const Usage u0 = usage();
      const auto t0 = Clock::now();
      step();
      const auto t1 = Clock::now();
      const Usage u1 = usage();
      cpu_s += u1.cpu_s - u0.cpu_s;
      faults += u1.faults - u0.faults;
      // OpenBLAS itself, not cpu::gemm (which may hand 4096³ to oneDNN): one baseline everywhere
      blas::sgemm(blas::NoTrans, blas::NoTrans, kSgemmN, kSgemmN, kSgemmN, 1.f, A.data(), kSgemmN,
                  B.data(), kSgemmN, 0.f, C.data(), kSgemmN);
      benchmark::ClobberMemory();
      const auto t2 = Clock::now();
      sgemm_cpu_s += usage().cpu_s - u1.cpu_s;
      const double t = std::chrono::duration<double>(t1 - t0).count();
      st.SetIterationTime(t);
      step_s += t;
      sgemm_s += std::chrono::duration<double>(t2 - t1).count();
    }
    const AllocatorStats after = allocator_stats();
    const double flops = model_flops(s, training);
    const double iters = static_cast<double>(st.iterations());
    const double sgemm_rate = 2.0 * kSgemmN * kSgemmN * double(kSgemmN) * iters / sgemm_s;
    st.counters["tokens_per_s"] =
        benchmark::Counter(double(kTokens), benchmark::Counter::kIsIterationInvariantRate);
    set_flops(st, flops);
    st.counters["sgemm_flops"] = sgemm_rate;
    st.counters["vs_sgemm"] = (flops * iters / step_s) / sgemm_rate;
    st.counters["peak_MB"] = double(after.peak_in_use_bytes) / 1e6;
    st.counters["held_MB"] = double(after.peak_os_bytes) / 1e6;
    st.counters["os_allocs"] = double(after.os_allocs - before.os_allocs);
    st.counters["faults"] = double(faults) / iters;
    st.counters["cpu_util"] = cpu_s / (step_s * num_threads());
    st.counters["vs_sgemm_cpu"] = (flops * iters / cpu_s) / (2.0 * kSgemmN * kSgemmN * double(kSgemmN) * iters / sgemm_cpu_s);
    st.SetLabel(cat("B=", kBatch, " T=", kSeq, " V=", kVocab));
    if (after.os_allocs != before.os_allocs)
      st.SkipWithError(cat("steady state asked the OS for ", after.os_allocs - before.os_allocs,
                           " blocks (expected 0)").c_str());
  }, Timing::manual)->MinTime(2.0);
}

}  // namespace e2e_suite

void set_e2e_compiled(bool on) { e2e_suite::g_compiled = on; }

void register_e2e() {
  using namespace e2e_suite;
  for (const char* model : {"bert-tiny", "bert-mini", "bert-small"})
    for (bool training : {true, false}) {
      add_step(model, training, false);
      if (g_compiled) add_step(model, training, true);
      if (g_compiled && !training) add_step(model, training, true, /*frozen=*/true);
    }
}

}  // namespace mase::bench
