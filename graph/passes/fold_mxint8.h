// graph/passes/fold_mxint8.h — constant folding: dequantize each MXINT8 weight ONCE, at compile
// time, instead of at every forward.
//
// An MxInt8Linear (quant/mxint8_linear.h) keeps only its packed weight (int8 elements and one
// E8M0 scale per 32); on the CPU it unpacks it into a temporary f32 (out, in) matrix in every
// forward, then calls linear(x, w, bias). This pass replaces each call_module MxInt8Linear
// node with
//   get_attr _tensor_constantN (the unpacked weight, kept by the graph) -> linear(x, w, bias)
// so a replay runs only the GEMM. On the CPU the weight is the same tensor of values the eager
// forward unpacks, and the op is the same linear, so outputs (and the bias's and input's
// gradients) are equal bit for bit; the packed weight has no gradient (it is a buffer), so
// folding is valid in training mode too. (On a GPU the eager forward decodes the packed
// weight inside its own GEMM, mxint8_linear, quant/mxint8.h: the folded dense linear equals
// it within rounding only. The pass runs on both devices.)
// The price is memory: each folded layer keeps 4 bytes per weight instead of 1.03, which
// undoes MXINT8's saving at run time. `budget_bytes` bounds it ("when memory allows"): layers
// are folded in graph order while the folded bytes stay within it; the rest stay packed.
// A plan holding folded weights goes stale if the packed weights change (a reload): the
// compiled model must then be cleared (graph/compile.h).
// Read next: graph/passes/dce.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

struct FoldReport {
  int64_t folded = 0, skipped = 0;  // skipped: over the budget
  size_t folded_bytes = 0;          // f32 weights now held by the graph
  std::vector<std::string> names;   // the folded nodes
  // "fold_mxint8: folded 14 MXINT8 weights (1.64 MB of f32 constants), 0 left packed"
  std::string str() const;
};

FoldReport fold_mxint8(Graph& g, size_t budget_bytes = size_t(1) << 30);

}  // namespace mase::graph
