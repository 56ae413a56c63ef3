// graph/passes/rewrite.h — rebuild a graph node by node, with some nodes replaced: the tool
// the fusion passes (fuse_bias_gelu.h, fuse_add_norm.h) use to put new nodes in the MIDDLE of
// a graph (Graph::add_node only appends, before the output).
//
// A pass first finds its matches on the old graph (reading only), then describes the edit:
//   drop      the pattern's nodes whose values nothing outside the pattern reads; not copied
//   replace   for the LAST node of each pattern, a function that writes the replacement into
//             the new graph at that node's place and returns the node that stands for it
// rewrite() copies every other node (name, kind, target, attrs, metadata) with its args
// mapped to their new nodes, and the constants and the output's names. Emitting at the last
// node's place keeps the order of everything else, so dropout masks are drawn in the same
// order as before (training-mode outputs stay equal to eager's).
// Read next: graph/passes/fuse_bias_gelu.h (the smallest user).
#pragma once
#include <functional>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

// old node -> its node in the graph being built
using NodeMap = std::unordered_map<const Node*, Node*>;
using Emit = std::function<Node*(Graph& out, const NodeMap& map)>;

struct Rewrite {
  std::unordered_set<const Node*> drop;
  std::unordered_map<const Node*, Emit> replace;
};

// What a fusion pass did: "fuse_bias_gelu: fused 2 patterns (Linear + GELU -> linear +
// bias_gelu)" and one line per pattern (the node it replaced).
struct FuseReport {
  std::string pass, pattern;
  int64_t fused = 0;
  std::vector<std::string> names;
  std::string str() const;
};

// A new graph over the same model. GraphError when a copied node reads a dropped one.
Graph rewrite(const Graph& g, const Rewrite& r);

// The new node of `old` (GraphError naming it when it was dropped).
Node* mapped(const NodeMap& map, const Node* old);

// A get_attr node reading the parameter `path` of the model ("bert.pooler.dense.weight").
Node* add_parameter(Graph& out, const std::string& path);

// A dense layer WITH a bias, in either form a graph holds one: a call_module exactly nn::Linear
// (as traced), or a linear(x, w, b) call with all three arguments (what fold_lora and
// fold_mxint8 leave). The fusion passes take both, so a folded LoRA layer fuses too.
struct Dense {
  const Node* node = nullptr;  // the Linear call
  const Node* x = nullptr;     // its input
  const Node* w = nullptr;     // linear(x, w, b)'s w and b; null for a call_module Linear
  const Node* b = nullptr;
};
bool match_dense(const Graph& g, const Node* n, Dense& out);
// Emits linear(x, W) (no bias) for `d` into `out`, and sets `bias` to the bias's node there.
Node* emit_dense_without_bias(Graph& out, const NodeMap& map, const Dense& d, Node*& bias);

// The module a call_module node calls, when it is exactly an M (not a subclass: a
// QuantizedLinear is a Linear whose forward quantizes first); nullptr otherwise.
template <class M>
M* module_exactly(const Graph& g, const Node* n) {
  if (!n || n->op != OpKind::call_module) return nullptr;
  nn::Module* m = g.root().submodule(n->target).get();
  return m && typeid(*m) == typeid(M) ? static_cast<M*>(m) : nullptr;
}

}  // namespace mase::graph
