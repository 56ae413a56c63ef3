// graph/passes/narrow_cls.cpp — the last layer on the [CLS] row only (see narrow_cls.h).
//
// Two walks. Backward from the select, in reverse execution order (so every reader of a node
// is decided before the node): a node joins the region when all its readers are in it and read
// it token-wise on one axis; a node some region node reads token-wise but that fails the test
// is a boundary, sliced to one token. Then forward, at the select's place (rewrite.h): each
// region node again, on narrowed inputs, and the select of the one row left.
#include "graph/passes/narrow_cls.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graph/op_table.h"
#include "graph/passes/rewrite.h"
#include "models/layers.h"

namespace mase::graph {
namespace {

struct TokenArg {
  size_t index;  // which argument
  int64_t dim;   // its token axis
};

bool computed(const Node* n) {  // a value the forward makes, not a parameter or an input
  return n && n->op != OpKind::get_attr && n->op != OpKind::placeholder;
}

// For a node whose value has its token axis at `dim`: the arguments that carry tokens, and
// their token axis; nullopt when the node cannot be computed on one token. B and T let views
// be checked: a view may be narrowed only if it keeps (B, T) in front.
std::optional<std::vector<TokenArg>> token_args(const Graph& g, const Node& n, int64_t dim,
                                                int64_t B, int64_t T, bool training) {
  using V = std::vector<TokenArg>;
  if (n.op == OpKind::call_module) {
    if (module_exactly<nn::Linear>(g, &n) || module_exactly<nn::LayerNorm>(g, &n) ||
        module_exactly<nn::GELU>(g, &n) || (!training && module_exactly<nn::Dropout>(g, &n)))
      return V{{0, dim}};  // each acts on the last axis: rows are independent
    return std::nullopt;   // (a Dropout module in training would draw a (B, 1, H) mask)
  }
  if (n.op != OpKind::call_function && n.op != OpKind::call_method) return std::nullopt;
  const std::string& t = n.target;
  if (t == "linear" || t == "linear_gelu" || t == "gelu" || t == "bias_gelu" ||
      t == "layer_norm" || (t == "dropout" && !training) || t == "contiguous")
    return V{{0, dim}};
  if (t == "dropout_add_layer_norm" && (!training || dim == 1))  // x, [x_bias], residual, w, b
    return V{{0, dim}, {n.args.size() == 5 ? size_t(2) : size_t(1), dim}};
  if (t == "add" && n.args.size() == 2 && computed(n.args[0]) && computed(n.args[1]))
    return V{{0, dim}, {1, dim}};
  if (t == "transpose") {
    const int64_t a = attr_int(n.attrs, "dim0"), b = attr_int(n.attrs, "dim1");
    if (a < 0 || b < 0) return std::nullopt;
    return V{{0, dim == a ? b : dim == b ? a : dim}};
  }
  if (t == "view" || t == "reshape") {
    const std::vector<int64_t> s = attr_ints(n.attrs, "shape");
    if (dim != 1 || s.size() < 3 || s[0] != B || s[1] != T) return std::nullopt;
    return V{{0, 1}};  // (B, T, …) -> (B, T, …): the token axis stays where it is
  }
  if (t == "sdpa" && dim == 2) return V{{0, 2}};  // (B, NH, Tq, HS): through the query only
  return std::nullopt;
}

// Whether running `n` in training may draw from the generator: a dropout with p > 0, or a
// module call other than the plain layers known to have none (a LoRA layer may drop its input).
bool draws(const Graph& g, const Node& n) {
  if (n.op == OpKind::call_module)
    return !(module_exactly<nn::Linear>(g, &n) || module_exactly<nn::LayerNorm>(g, &n) ||
             module_exactly<nn::GELU>(g, &n) || module_exactly<nn::Embedding>(g, &n));
  if (n.target != "dropout" && n.target != "dropout_add_layer_norm" && n.target != "sdpa")
    return false;
  const AttrValue* p = find_attr(n.attrs, n.target == "sdpa" ? "dropout_p" : "p");
  return !p || !std::holds_alternative<double>(*p) || std::get<double>(*p) > 0;
}

// The head size of an sdpa node's query, read off the view that split the heads:
// q = transpose(view(x, [B, T, NH, HS])) in BERT's trace; 0 when it cannot be read.
int64_t query_head_size(const Node& sdpa) {
  const Node* q = sdpa.args.empty() ? nullptr : sdpa.args[0];
  while (q && (q->target == "transpose" || q->target == "contiguous") && !q->args.empty())
    q = q->args[0];
  if (!q || (q->target != "view" && q->target != "reshape")) return 0;
  const std::vector<int64_t> s = attr_ints(q->attrs, "shape");
  return s.size() == 4 ? s[3] : 0;
}

// (B, T) of the graph's input_ids, or nullopt.
std::optional<std::pair<int64_t, int64_t>> batch_and_tokens(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->op == OpKind::placeholder && n->target == "input_ids") {
      const std::vector<int64_t> s = attr_ints(n->attrs, "shape");
      if (s.size() == 2) return std::pair{s[0], s[1]};
    }
  return std::nullopt;
}

}  // namespace

std::string NarrowReport::str() const {
  if (narrowed == 0) return cat("narrow_cls: nothing narrowed (", skipped, ")\n");
  std::string s;
  for (const auto& n : sliced) s += (s.empty() ? "" : ", ") + n;
  return cat("narrow_cls: ", narrowed, " nodes of the last layer compute 1 of ", tokens,
             " tokens (sliced: ", s, ")\n");
}

NarrowReport narrow_cls(Graph& g, bool training, bool cuda) {
  NarrowReport report;
  const auto bt = batch_and_tokens(g);
  if (!bt || bt->second < 2) {
    report.skipped = "no input_ids (B, T) with T > 1";
    return report;
  }
  const auto [B, T] = *bt;
  report.tokens = T;
  // the select of one token from the last layer's (B, T, H): x[:, i]
  const std::vector<Node*> nodes = g.nodes();
  const Node* select = nullptr;
  for (const Node* n : nodes)
    if (n->op == OpKind::call_function && n->target == "select" && n->args.size() == 1 &&
        attr_int(n->attrs, "dim") == 1 && n->args[0] && n->args[0]->users.size() == 1) {
      if (select) {
        report.skipped = "more than one select of a token";
        return report;
      }
      select = n;
    }
  if (!select) {
    report.skipped = "the classifier reads no single token (mean pooling?)";
    return report;
  }
  const int64_t index = attr_int(select->attrs, "index");
  if (index < 0 || index >= T) {  // x[:, -1] would need its own slice arithmetic
    report.skipped = cat("the token read, ", index, ", is not in [0, ", T, ")");
    return report;
  }

  // backward: the region (node -> the arguments it reads token-wise) and the boundaries (node ->
  // its token axis)
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  std::unordered_map<const Node*, std::vector<TokenArg>> region;
  std::unordered_map<const Node*, int64_t> boundary;
  std::unordered_map<const Node*, std::vector<int64_t>> token_reads;  // by region nodes
  std::unordered_set<const Node*> other_reads;                        // read whole by one
  token_reads[select->args[0]].push_back(1);
  for (size_t i = position.at(select->args[0]) + 1; i-- > 0;) {
    const Node* n = nodes[i];
    auto reads = token_reads.find(n);
    if (reads == token_reads.end()) continue;  // no region node reads it token-wise
    const std::vector<int64_t>& dims = reads->second;
    const int64_t dim = dims.front();
    if (std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return d != dim; })) {
      report.skipped = cat(n->name, " is read on two token axes");
      return report;
    }
    const bool only_region_reads =
        !other_reads.count(n) &&
        std::all_of(n->users.begin(), n->users.end(),
                    [&](const Node* u) { return region.count(u) || u == select; });
    const auto args = only_region_reads ? token_args(g, *n, dim, B, T, training) : std::nullopt;
    if (!args) {
      boundary[n] = dim;
      continue;
    }
    region[n] = *args;
    for (size_t k = 0; k < n->args.size(); ++k) {
      const Node* a = n->args[k];
      if (!a) continue;
      auto it = std::find_if(args->begin(), args->end(),
                             [&](const TokenArg& t) { return t.index == k; });
      if (it != args->end()) token_reads[a].push_back(it->dim);
      else other_reads.insert(a);
    }
  }
  if (region.empty()) {
    report.skipped = cat(select->args[0]->name, " cannot be computed on one token");
    return report;
  }

  // forward: the region again, on one token, emitted at the select's place
  std::vector<const Node*> ordered;
  for (const auto& [n, args] : region) ordered.push_back(n);
  std::sort(ordered.begin(), ordered.end(),
            [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
  std::vector<const Node*> cut;
  for (const auto& [n, dim] : boundary) cut.push_back(n);
  std::sort(cut.begin(), cut.end(),
            [&](const Node* a, const Node* b) { return position.at(a) < position.at(b); });
  // In training the region's dropouts draw later than before (at the select's place): nothing
  // else may draw between, or the generator's offsets of the two would swap.
  if (training)
    for (size_t i = position.at(ordered.front()); i < position.at(select); ++i)
      if (!region.count(nodes[i]) && draws(g, *nodes[i])) {
        report.skipped = cat(nodes[i]->name, " draws dropout between the narrowed nodes");
        return report;
      }
  // On a GPU a row-mapped attention dropout needs the fused kernel: the reference composition,
  // which runs the head sizes it lacks, draws whole (B, NH, T, T) tensors
  if (training && cuda)
    for (const Node* n : ordered)
      if (n->target == "sdpa" && draws(g, *n)) {
        const int64_t hs = query_head_size(*n);
        if (!sdpa_fused_on_cuda(hs)) {
          report.skipped = cat(n->name, ": the CUDA attention kernel has no head size ",
                               hs ? std::to_string(hs) : std::string("(unknown)"),
                               " to draw a row-mapped dropout with");
          return report;
        }
      }
  for (const Node* b : cut) report.sliced.push_back(b->name);
  report.narrowed = static_cast<int64_t>(ordered.size());

  Rewrite r;
  for (const Node* n : ordered) r.drop.insert(n);
  r.replace[select] = [&](Graph& out, const NodeMap& map) {
    std::unordered_map<const Node*, Node*> one;  // old node -> its one-token twin
    for (const Node* b : cut) {
      const Attrs a{{"dim", boundary.at(b)}, {"start", index}, {"end", index + 1},
                    {"step", int64_t(1)}};
      one[b] = out.add_node(OpKind::call_function, "slice", {mapped(map, b)}, a,
                            b->name + "_token");
    }
    for (const Node* n : ordered) {
      const std::vector<TokenArg>& args = region.at(n);
      std::vector<Node*> in;
      for (size_t k = 0; k < n->args.size(); ++k) {
        const Node* a = n->args[k];
        const bool token = std::any_of(args.begin(), args.end(),
                                       [&](const TokenArg& t) { return t.index == k; });
        in.push_back(token ? one.at(a) : mapped(map, a));
      }
      Attrs attrs = n->attrs;
      if (n->target == "view" || n->target == "reshape")
        for (auto& [key, value] : attrs)
          if (key == "shape") std::get<std::vector<int64_t>>(value)[1] = 1;
      // training: row b of the narrowed tensor draws the dropout row of token `index` of
      // sequence b, b·T + index, as eager's (B, T, ·) tensor does (RowMap, runtime/philox.h)
      if (training && (n->target == "dropout_add_layer_norm" || n->target == "sdpa")) {
        attrs.push_back({"rows_period", int64_t(1)});
        attrs.push_back({"rows_stride", T});
        attrs.push_back({"rows_first", index});
      }
      one[n] = out.add_node(n->op, n->target, std::move(in), std::move(attrs), n->name);
    }
    return out.add_node(OpKind::call_function, "select", {one.at(select->args[0])},
                        {{"dim", int64_t(1)}, {"index", int64_t(0)}}, select->name);
  };
  g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
