// graph/passes/fuse_linear_gelu.cpp — linear + bias_gelu -> linear_gelu for inference plans
// (see fuse_linear_gelu.h).
#include "graph/passes/fuse_linear_gelu.h"

namespace mase::graph {

FuseReport fuse_linear_gelu(Graph& g) {
  FuseReport report{"fuse_linear_gelu", "linear + bias_gelu -> linear_gelu", 0, {}};
  Rewrite r;
  for (const Node* act : g.nodes()) {
    if (act->op != OpKind::call_function || act->target != "bias_gelu" || act->args.size() != 2)
      continue;
    const Node* lin = act->args[0];
    if (!lin || lin->op != OpKind::call_function || lin->target != "linear" ||
        lin->args.size() != 2 || !lin->attrs.empty() || lin->users.size() != 1)
      continue;
    r.drop.insert(lin);
    r.replace[act] = [lin, act](Graph& out, const NodeMap& map) {
      return out.add_node(OpKind::call_function, "linear_gelu",
                          {mapped(map, lin->args[0]), mapped(map, lin->args[1]),
                           mapped(map, act->args[1])},
                          {}, act->name);
    };
    report.names.push_back(lin->name + " + " + act->name);
  }
  report.fused = static_cast<int64_t>(report.names.size());
  if (report.fused) g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
