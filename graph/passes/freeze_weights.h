// graph/passes/freeze_weights.h — "freezing" for CPU inference: every Linear weight of an eval
// plan packed ONCE into the blocked layout of the GEMM kernel, instead of read in the model's
// (out, in) layout by every call.
//
// Opt-in (CompileOptions::freeze; `mase-graph compile --freeze`, `mase-bench --e2e --compile`'s
// e2e/<model>/eval/frozen, `mase-train --eval-only --compile`), because it adds a promise the
// compiler cannot check: the weights do not change
// while the plan is used. A finished model being evaluated keeps it; mase-train's evaluations
// between epochs do not (call Compiled::clear() after changing weights). PyTorch's Inductor
// has the same switch for the same reason (torch._inductor.config.freezing).
//
// What it does: the graph is not rewritten. The pass walks it for Linear calls — call_module
// nn::Linear nodes and call_function linear(x, w[, b]) or linear_gelu(x, w, b) nodes whose w
// is a get_attr (a parameter, or a constant folded by fold_lora / fold_mxint8) — and packs
// each weight into a FrozenWeights table (autograd/frozen.h), one per Compiled and shared by
// its eval plans (a weight packed for one batch shape serves the others); graph::Compiled
// installs the table around the plan's runs, where linear() without autograd runs each
// packed weight on oneDNN's reordered-weights matmul (runtime/cpu/onednn_gemm.h) with the
// bias fused in (linear_gelu: on our AMX tiles with bias and GELU, or its composition). Eval
// plans on the CPU only (with autograd there is a backward, which needs W as it is); weights
// it cannot pack (no oneDNN in the build, another dtype or device) are counted and left as
// they are. Outputs agree with eager's within fp32 reassociation (oneDNN's blocked kernel
// sums K in another order), not bit for bit (tests/graph/test_freeze_weights.cpp). Under
// --precision bf16 on a CPU with AMX-BF16 the table packs our AMX tiles instead (rounded to
// bf16 once); a frozen Linear then equals eager bf16's bit for bit wherever eager bf16 also
// runs it on AMX (from kAmxMinWork multiply-adds: the same tiles and kernel), and within bf16's
// reassociation below that, where eager sums the same rounded operands elsewhere. Under bf16
// without AMX (AVX512-BF16: AMD Zen 4/5) it packs oneDNN's layout in bf16, eager's rounded
// operands summed in another order; where bf16 is emulated it packs nothing (all "left as
// they are"): packing fp32 copies would run those Linears in fp32.
// The price: a second copy of each weight (bert-small: 51 MB), kept with the plan.
// Read next: autograd/frozen.h, graph/passes/memory_plan.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/frozen.h"
#include "graph/graph.h"

namespace mase::graph {

struct FreezeWeightsReport {
  int64_t packed = 0, skipped = 0;  // skipped: a weight the table could not take
  int64_t amx = 0;                  // of the packed, those in AMX bf16 tiles (--precision bf16)
  int64_t bf16 = 0;                 // ... and those in oneDNN's layout in bf16 (bf16 without AMX)
  size_t bytes = 0;                 // the packed copies
  std::vector<std::string> names;   // the Linear nodes whose weight was packed
  // "freeze_weights: packed 26 Linear weights (51.38 MB, oneDNN's blocked layout), 0 left as they are"
  std::string str() const;
};

FreezeWeightsReport freeze_weights(const Graph& g, FrozenWeights& table);

}  // namespace mase::graph
