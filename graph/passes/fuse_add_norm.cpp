// graph/passes/fuse_add_norm.cpp — Linear + Dropout + add + LayerNorm -> linear +
// dropout_add_layer_norm (see fuse_add_norm.h).
#include "graph/passes/fuse_add_norm.h"

#include "models/layers.h"

namespace mase::graph {
namespace {

struct Match {
  Dense dense;
  const Node *drop = nullptr, *add = nullptr, *norm = nullptr;
  const Node* residual = nullptr;
  double p = 0;
};

// One side of the add: dense, or drop(dense) with drop a Dropout or Identity module.
bool match_branch(const Graph& g, const Node* side, Match& m) {
  if (!side || side->users.size() != 1) return false;
  if (auto* d = module_exactly<nn::Dropout>(g, side)) {
    m.drop = side, m.p = d->p;
  } else if (module_exactly<nn::Identity>(g, side)) {
    m.drop = side, m.p = 0;
  }
  const Node* dense = m.drop ? side->args.at(0) : side;
  if (!match_dense(g, dense, m.dense) || dense->users.size() != 1) {
    m.drop = nullptr;  // all of this side's match, p included: the other side may match bare
    m.dense = {};
    m.p = 0;
    return false;
  }
  return true;
}

bool match(const Graph& g, const Node* norm, Match& m) {
  if (!module_exactly<nn::LayerNorm>(g, norm)) return false;
  const Node* add = norm->args.at(0);
  if (!add || add->op != OpKind::call_function || add->target != "add" || add->users.size() != 1 ||
      add->args.size() != 2 || add->args[0] == add->args[1])
    return false;
  m.norm = norm, m.add = add;
  for (int side : {0, 1})
    if (match_branch(g, add->args[side], m)) {
      m.residual = add->args[1 - side];
      return m.residual != nullptr;
    }
  return false;
}

}  // namespace

FuseReport fuse_add_norm(Graph& g) {
  FuseReport report{"fuse_add_norm",
                    "Linear + Dropout + add + LayerNorm -> linear + dropout_add_layer_norm", 0, {}};
  Rewrite r;
  const bool training = g.root().is_training();  // informative: the run's mode decides
  for (const Node* n : g.nodes()) {
    Match m;
    if (!match(g, n, m)) continue;
    for (const Node* d : {m.dense.node, m.drop, m.add})
      if (d) r.drop.insert(d);
    const double eps = static_cast<nn::LayerNorm*>(g.root().submodule(n->target).get())->eps;
    r.replace[n] = [m, eps, training](Graph& out, const NodeMap& map) {
      Node* b = nullptr;
      Node* y = emit_dense_without_bias(out, map, m.dense, b);
      Node* lw = add_parameter(out, m.norm->target + ".weight");
      Node* lb = add_parameter(out, m.norm->target + ".bias");
      Attrs attrs{{"p", m.p}, {"training", training}, {"eps", eps}};
      return out.add_node(OpKind::call_function, "dropout_add_layer_norm",
                          {y, b, mapped(map, m.residual), lw, lb}, std::move(attrs), m.norm->name);
    };
    report.names.push_back(cat(m.dense.node->name, m.drop ? " + " + m.drop->name : "", " + ",
                               m.add->name, " + ", m.norm->name));
  }
  report.fused = static_cast<int64_t>(report.names.size());
  if (report.fused) g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
