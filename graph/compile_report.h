// graph/compile_report.h — the Lab 4.1 report a student reads: compile a BERT for one
// signature and set it beside eager, step by step (what `mase-graph compile` prints).
//
// For one model, batch, sequence length and mode (eval: forward under no-grad, logits; train:
// forward with labels and dropout, then backward — no optimizer step, which compiling does
// not touch), it measures in one sitting:
//   * eager's first step, in a process that has run nothing yet (what any first call pays:
//     pages, threads, libraries), then the first call of the compiled model, split into
//     trace / passes / plan / first run (what compiling pays);
//   * steady-state time per step, median of `repeat` steps taken round-robin (so a shared
//     machine's load falls on all of them alike), in wall time and in CPU time: eager
//     reference (no fusion), eager fused (nn::fuse_kernels: what mase-train runs), compiled,
//     and compiled with each pass off;
//   * outputs: compiled vs eager fused (logits; in train mode the loss and every gradient,
//     dropout masks from the same seed): bitwise, or within 1e-4 when fold_lora,
//     freeze_weights or narrow_cls (on by default) changed the sums;
//   * memory: the plan's arena vs the sum of all intermediates, the arena the replays run out
//     of (every allocation of a run, recorded), and the allocator's measured peak
//     (runtime/allocator.h) of one eager fused and one compiled step above what was in use
//     before it, the compiled plan's arena counted (it is reserved). In train mode the
//     gradients are allocated (zero) before the step, so the peak is the activations, what
//     autograd saves and backward's temporaries: "activation memory".
// Library code: it throws, never exits; tools/mase_graph.cpp prints str().
// Read next: graph/compile.h, docs/lab4.md (the figures on this machine).
#pragma once
#include <string>
#include <vector>

#include "graph/compile.h"

namespace mase::graph {

struct CompileReportOptions {
  std::string model = "bert-tiny";  // a preset of nn::BertConfig::preset
  int64_t batch = 2, seq = 16, vocab_size = 30522;
  bool train = false;
  bool mxint8_weights = false;  // every Linear stored as MXINT8 (quant::mxint8_weights) first
  int64_t lora_rank = 0;        // > 0: insert_lora (alpha 2·rank, encoder Linears, B random)
  std::string device = "cpu";   // or cuda[:N]: model and batch there, steps synchronised
  std::vector<std::string> disabled;  // passes off in the compiled model (--no-pass)
  bool freeze = false;  // eval: CompileOptions::freeze (--freeze): Linear weights packed once
  // GEMM arithmetic (--precision): fp32, or bf16 (bf16 operands, fp32 sums; on the CPU AMX
  // tiles where present, where eval plans run linear_gelu fused), or tf32 (CUDA only); set for
  // the report's run, then the CPU's back to what it was (a GPU's to fp32)
  std::string precision = "fp32";
  int repeat = 5;
  int threads = 0;  // 0: leave the runtime's thread count as it is
  uint64_t seed = 0;
  bool progress = false;  // one line on stderr per stage (mase-graph compile: long on a big model)
};

struct TimedVariant {
  std::string name;     // "eager reference (unfused)", "compiled without fuse_add_norm", …
  double median_s = 0;      // wall time per step
  double cpu_median_s = 0;  // CPU time of the process (all threads) per step: steadier on a
                            // shared machine (time slices lost to others are not counted)
  double cpu_spread = 0;    // (3rd quartile - 1st quartile) / 2 / median of the CPU times
  int64_t fused_nodes = -1;  // compiled variants: nodes running a fused kernel (-1: eager)
};

struct CompileReport {
  CompileReportOptions options;
  int threads = 1;
  Signature signature;
  double eager_first_s = 0, eager_first_cpu_s = 0;  // eager's first step in a fresh process
  // the compiled model's first step, right after eager's: its first call (split below) and,
  // in train mode, the backward after it
  double compiled_first_s = 0, compiled_first_cpu_s = 0;
  FirstCallSplit first_call;
  std::vector<PassRun> passes;
  size_t traced_nodes = 0, compiled_nodes = 0;
  bool memory_planned = false;
  MemoryPlan memory;
  size_t eager_peak_bytes = 0, compiled_peak_bytes = 0;  // measured, one step each
  size_t eager_kept_bytes = 0, compiled_kept_bytes = 0;  // train: in use after the forward
  std::string arena;          // the steady plan's AllocationPlan::str(), and its runs
  std::string cuda_graph;     // CUDA: nodes captured, or why capture failed
  double max_abs_diff = 0;    // compiled vs eager fused, over the compared tensors
  std::vector<TimedVariant> times;  // [0] reference, [1] eager fused, [2] compiled, then ablations
  bool outputs_equal = false;  // bitwise; with LoRA folded, frozen weights or a narrowed
                               // last layer: max |difference| within 1e-4
  std::string compared;  // "logits" or "loss and 40 gradients"
  std::string str() const;
  // "what each pass bought": each pass's gain in CPU time, flagged when within this run's
  // noise (the identical "compiled without dce" row) or when it loses
  std::string bought() const;
  // The numbers of str() as CSV, one row per measurement, for a table or a plot of Lab 4.1:
  //   section,name,value,unit,cpu_ms,vs_eager
  // section: first_step (eager, compiled: ms), first_call (the compiled one's trace, passes,
  // plan, first_run: ms), pass (each pass's time), step
  // (each timed variant, wall ms per step; vs_eager = eager fused's CPU time / this one's),
  // memory (peak MB of one step); a field that does not apply is empty.
  std::string csv() const;
};

CompileReport compile_report(const CompileReportOptions& o);

}  // namespace mase::graph
