// graph/passes/fuse_bias_gelu.cpp — Linear + GELU -> linear + bias_gelu (see fuse_bias_gelu.h).
#include "graph/passes/fuse_bias_gelu.h"

#include "models/layers.h"

namespace mase::graph {

FuseReport fuse_bias_gelu(Graph& g) {
  FuseReport report{"fuse_bias_gelu", "Linear + GELU -> linear + bias_gelu", 0, {}};
  Rewrite r;
  for (const Node* act : g.nodes()) {
    const bool is_gelu = module_exactly<nn::GELU>(g, act) ||
                         (act->op == OpKind::call_function && act->target == "gelu");
    if (!is_gelu || act->args.size() != 1) continue;
    Dense d;
    if (!match_dense(g, act->args[0], d) || d.node->users.size() != 1) continue;
    r.drop.insert(d.node);
    const std::string name = act->name;
    r.replace[act] = [d, name](Graph& out, const NodeMap& map) {
      Node* b = nullptr;
      Node* y = emit_dense_without_bias(out, map, d, b);
      return out.add_node(OpKind::call_function, "bias_gelu", {y, b}, {}, name);
    };
    report.names.push_back(d.node->name + " + " + act->name);
  }
  report.fused = static_cast<int64_t>(report.names.size());
  if (report.fused) g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
