// graph/passes/rewrite.cpp — copying a graph with replacements (see rewrite.h).
#include "graph/passes/rewrite.h"

#include "models/layers.h"

namespace mase::graph {

Node* mapped(const NodeMap& map, const Node* old) {
  if (!old) return nullptr;  // an absent tensor stays absent
  auto it = map.find(old);
  MASE_CHECK(it != map.end(), graph::GraphError, "[rewrite] expected ", old->name,
             " to be copied before its users, got it dropped (a pass dropped a node that ",
             "something outside its pattern still reads)");
  return it->second;
}

Node* add_parameter(Graph& out, const std::string& path) {
  return out.add_node(OpKind::get_attr, path, {});
}

bool match_dense(const Graph& g, const Node* n, Dense& out) {
  if (!n) return false;
  if (auto* lin = module_exactly<nn::Linear>(g, n)) {
    if (!lin->bias.defined()) return false;
    out = {n, n->args.at(0), nullptr, nullptr};
    return true;
  }
  if (n->op != OpKind::call_function || n->target != "linear" || n->args.size() != 3 ||
      !n->args[2] || !n->attrs.empty())
    return false;
  out = {n, n->args[0], n->args[1], n->args[2]};
  return true;
}

Node* emit_dense_without_bias(Graph& out, const NodeMap& map, const Dense& d, Node*& bias) {
  Node* w = d.w ? mapped(map, d.w) : add_parameter(out, d.node->target + ".weight");
  bias = d.b ? mapped(map, d.b) : add_parameter(out, d.node->target + ".bias");
  return out.add_node(OpKind::call_function, "linear", {mapped(map, d.x), w}, {},
                      d.node->name);  // x·Wᵀ, no bias
}

std::string FuseReport::str() const {
  std::string s = cat(pass, ": fused ", fused, " pattern", fused == 1 ? "" : "s", " (", pattern,
                      ")\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

Graph rewrite(const Graph& g, const Rewrite& r) {
  Graph out(g.root_ptr());
  for (const auto& [name, t] : g.constants()) out.add_constant(t, name);
  NodeMap map;
  for (const Node* n : g.nodes()) {
    if (auto it = r.replace.find(n); it != r.replace.end()) {
      map[n] = it->second(out, map);
      continue;
    }
    if (r.drop.count(n)) continue;
    if (n->op == OpKind::output) {
      std::vector<std::pair<std::string, Node*>> outs;
      for (size_t k = 0; k < n->args.size(); ++k)
        outs.push_back({g.output_names().at(k), mapped(map, n->args[k])});
      out.set_output(outs);
      continue;
    }
    std::vector<Node*> args;
    for (const Node* a : n->args) args.push_back(mapped(map, a));
    Node* copy = out.add_node(n->op, n->target, std::move(args), n->attrs, n->name);
    copy->meta = n->meta;
    map[n] = copy;
  }
  out.lint();
  return out;
}

}  // namespace mase::graph
