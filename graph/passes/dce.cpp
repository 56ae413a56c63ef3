// graph/passes/dce.cpp — dead-code elimination with a report (see dce.h).
#include "graph/passes/dce.h"

#include <unordered_set>

namespace mase::graph {

DceReport dead_code_elimination(Graph& g) {
  std::vector<std::string> before;
  for (const Node* n : g.nodes()) before.push_back(n->name);
  DceReport r;
  r.removed = g.eliminate_dead_code();
  std::unordered_set<std::string> kept;
  for (const Node* n : g.nodes()) kept.insert(n->name);
  for (const auto& name : before)
    if (!kept.count(name)) r.names.push_back(name);
  return r;
}

std::string DceReport::str() const {
  std::string s = cat("dce: removed ", removed, " dead node", removed == 1 ? "" : "s", "\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

}  // namespace mase::graph
