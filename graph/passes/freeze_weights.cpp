// graph/passes/freeze_weights.cpp — Linear weights packed once for eval plans (see
// freeze_weights.h).
#include "graph/passes/freeze_weights.h"

#include "graph/passes/memory_plan.h"
#include "graph/passes/rewrite.h"
#include "models/layers.h"

namespace mase::graph {

FreezeWeightsReport freeze_weights(const Graph& g, FrozenWeights& table) {
  FreezeWeightsReport report;
  for (const Node* n : g.nodes()) {
    Tensor w;  // the weight this Linear call reads, if it is one
    if (auto* lin = module_exactly<nn::Linear>(g, n)) {
      w = lin->weight;
    } else if (n->op == OpKind::call_function &&
               (n->target == "linear" || n->target == "linear_gelu") && n->args.size() >= 2 &&
               n->args[1] && n->args[1]->op == OpKind::get_attr) {
      w = g.get_attr_value(*n->args[1]);
    } else {
      continue;
    }
    if (!table.add(w)) {
      ++report.skipped;
      continue;
    }
    report.names.push_back(n->name);
  }
  report.packed = static_cast<int64_t>(report.names.size());
  report.amx = static_cast<int64_t>(table.amx_size());
  report.bytes = table.bytes();
  return report;
}

std::string FreezeWeightsReport::str() const {
  std::string s = cat("freeze_weights: packed ", packed, " Linear weight", packed == 1 ? "" : "s",
                      " (", megabytes(bytes), ", ",
                      amx == 0         ? "oneDNN's blocked layout"
                      : amx == packed ? "AMX bf16 tiles"
                                       : cat(amx, " in AMX bf16 tiles, the rest in oneDNN's blocked layout"),
                      "), ", skipped,
                      " left as they are\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

}  // namespace mase::graph
