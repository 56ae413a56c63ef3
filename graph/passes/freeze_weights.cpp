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
  report.bf16 = static_cast<int64_t>(table.bf16_size());
  report.bytes = table.bytes();
  return report;
}

std::string FreezeWeightsReport::str() const {
  // the layouts: "AMX bf16 tiles", or "12 in AMX bf16 tiles, 2 in oneDNN's blocked layout"
  const int64_t f32 = packed - amx - bf16;
  std::vector<std::pair<int64_t, std::string>> kinds;
  for (auto [n, name] : {std::pair{amx, "AMX bf16 tiles"},
                         {bf16, "oneDNN's blocked layout in bf16"},
                         {f32, "oneDNN's blocked layout"}})
    if (n > 0) kinds.emplace_back(n, name);
  std::string layout = kinds.empty() ? "nothing packed" : kinds[0].second;
  if (kinds.size() > 1) {
    layout.clear();
    for (const auto& [n, name] : kinds) layout += cat(layout.empty() ? "" : ", ", n, " in ", name);
  }
  std::string s = cat("freeze_weights: packed ", packed, " Linear weight", packed == 1 ? "" : "s",
                      " (", megabytes(bytes), ", ", layout, "), ", skipped, " left as they are\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

}  // namespace mase::graph
