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
    const Node* dense = act->args[0];
    auto* lin = module_exactly<nn::Linear>(g, dense);
    if (!lin || !lin->bias.defined() || dense->users.size() != 1) continue;
    r.drop.insert(dense);
    const std::string path = dense->target, name = act->name;
    r.replace[act] = [dense, path, name](Graph& out, const NodeMap& map) {
      Node* w = add_parameter(out, path + ".weight");
      Node* b = add_parameter(out, path + ".bias");
      Node* y = out.add_node(OpKind::call_function, "linear", {mapped(map, dense->args[0]), w}, {},
                             dense->name);  // x·Wᵀ, no bias
      return out.add_node(OpKind::call_function, "bias_gelu", {y, b}, {}, name);
    };
    report.names.push_back(dense->name + " + " + act->name);
  }
  report.fused = static_cast<int64_t>(report.names.size());
  if (report.fused) g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
