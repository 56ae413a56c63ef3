// graph/passes/fold_lora.h — constant folding for inference: each LoRA layer's low-rank update
// folded into its weight ONCE, at compile time, instead of a second path at every forward.
//
// A LoraLinear (models/lora.h) computes y = x·Wᵀ + b + s·x·Aᵀ·Bᵀ (s = alpha / r): one GEMM
// of the base weight plus two thin ones, and an add over (B, T, out). In EVAL mode (no adapter
// dropout, nothing to train) this pass replaces each call_module LoraLinear node with
//   get_attr _tensor_constantN (W' = W + s·B·A, nn::LoraLinear::fused()'s math) ->
//   linear(x, W', b)
// so a replay runs one GEMM, and the fusion passes after it (fuse_bias_gelu, fuse_add_norm
// match a linear(x, w, b) call too) give the folded layers the fused kernels that eager LoRA
// blocks do not get (models/fusion.h leaves a block with a LoraLinear child unfused).
// Outputs equal eager LoRA's within fp32 rounding (W' rounds once; tests/graph/test_fold_lora.cpp).
// In TRAINING mode the pass is not run (graph/compile.cpp): A and B must receive gradients.
//
// The folded W' is a value of W, A and B at compile time, but an eval plan outlives them:
// mase-train --compile evaluates, trains on, and evaluates again with the same plan, and a
// checkpoint loaded into the model (load_state_dict copies into the same tensors) changes even
// the frozen W in place, as does anything writing W's memory when W is a view of memory the
// runtime does not own (Tensor::from_storage). No op bumps a version we could read, so
// refresh() — which graph::Compiled calls before each replay — looks at the values:
//   CPU   every fold keeps a host copy of the W, A and B it was made from and compares them bit
//         for bit (a memcmp over W's own memory: bert-small's 50 MB of encoder weights is a few
//         ms; the copies are the price, one more W per folded layer), refolding W' in place
//         when any of them moved;
//   CUDA  it refolds W' in place before every replay: B·A, a scale and an add on the device,
//         without a sync, where a comparison would copy W to the host each time.
// Either way W' is W + s·B·A of the values the replay sees, recomputed from W (never from the
// previous W': refolding twice changes nothing), and W itself is only read. A layer whose
// shapes changed since is a ShapeError: the plan must be cleared (Compiled::clear()).
// freeze_weights (opt-in) packs W' once and does not follow a refold: its contract is that no
// weight changes while the plan is used (graph/passes/freeze_weights.h).
// Read next: graph/passes/fold_mxint8.h (the other constant fold), graph/compile.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "models/lora.h"

namespace mase::graph {

struct LoraFold {
  std::shared_ptr<nn::LoraLinear> module;
  Tensor weight;        // W' (out, in): the graph constant the plan reads
  Tensor a, b, w;       // CPU: host copies of lora_A, lora_B and W as folded (CUDA: none)
  std::string path;     // the module's, for errors
  // Refolds W' in place if W, A or B changed since (CUDA: always); true when it did.
  bool refresh();
};

struct FoldLoraReport {
  std::vector<LoraFold> folds;
  std::vector<std::string> names;  // the folded nodes
  size_t folded_bytes = 0;         // f32 weights now held by the graph
  // "fold_lora: folded 12 LoRA layers into their weights (1.57 MB of f32 constants)"
  std::string str() const;
};

// Every call_module LoraLinear node of `g` (eval graphs: the caller decides).
FoldLoraReport fold_lora(Graph& g);

}  // namespace mase::graph
