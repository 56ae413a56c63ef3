// graph/passes/dropout.cpp — count_dropout and remove_dropout (see dropout.h).
#include "graph/passes/dropout.h"

#include "models/layers.h"

namespace mase::graph {

bool is_dropout(const Graph& g, const Node& n) {
  if (n.op == OpKind::call_function) return n.target == "dropout";
  if (n.op != OpKind::call_module) return false;
  return dynamic_cast<const nn::Dropout*>(g.root().submodule(n.target).get()) != nullptr;
}

CountDropoutReport count_dropout(const Graph& g) {
  CountDropoutReport r;
  for (const Node* n : g.nodes())
    if (is_dropout(g, *n)) r.names.push_back(n->name);
  r.count = static_cast<int64_t>(r.names.size());
  return r;
}

RemoveDropoutReport remove_dropout(Graph& g) {
  RemoveDropoutReport r;
  for (Node* n : g.nodes()) {
    if (!is_dropout(g, *n)) continue;
    r.names.push_back(n->name);
    r.rewired_uses += g.replace_all_uses_with(n, n->args.at(0));  // users read its input
    g.erase(n);                                                   // now nothing uses it
  }
  r.removed = static_cast<int64_t>(r.names.size());
  return r;
}

std::string CountDropoutReport::str() const {
  std::string s = cat("count_dropout: ", count, " dropout node", count == 1 ? "" : "s", "\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

std::string RemoveDropoutReport::str() const {
  std::string s = cat("remove_dropout: removed ", removed, " dropout node", removed == 1 ? "" : "s",
                      " (", rewired_uses, " uses rewired to their inputs)\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

}  // namespace mase::graph
