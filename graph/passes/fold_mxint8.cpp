// graph/passes/fold_mxint8.cpp — MXINT8 weights unpacked once at compile time (see
// fold_mxint8.h).
#include "graph/passes/fold_mxint8.h"

#include "graph/passes/memory_plan.h"
#include "graph/passes/rewrite.h"
#include "quant/mxint8_linear.h"

namespace mase::graph {

FoldReport fold_mxint8(Graph& g, size_t budget_bytes) {
  FoldReport report;
  Rewrite r;
  for (const Node* n : g.nodes()) {
    auto* m = module_exactly<quant::MxInt8Linear>(g, n);
    if (!m) continue;
    const size_t bytes = static_cast<size_t>(m->out_features * m->in_features) * sizeof(float);
    if (report.folded_bytes + bytes > budget_bytes) {
      ++report.skipped;
      continue;
    }
    report.folded_bytes += bytes;
    report.names.push_back(n->name);
    Tensor w = m->dequantized_weight();  // (out, in) f32: what every eager forward unpacks
    const bool has_bias = m->bias.defined();
    r.replace[n] = [n, w, has_bias](Graph& out, const NodeMap& map) {
      std::vector<Node*> args{mapped(map, n->args.at(0)),
                              out.add_node(OpKind::get_attr, out.add_constant(w), {})};
      if (has_bias) args.push_back(add_parameter(out, n->target + ".bias"));
      return out.add_node(OpKind::call_function, "linear", std::move(args), {}, n->name);
    };
  }
  report.folded = static_cast<int64_t>(report.names.size());
  if (report.folded) g = rewrite(g, r);
  return report;
}

std::string FoldReport::str() const {
  std::string s = cat("fold_mxint8: folded ", folded, " MXINT8 weight", folded == 1 ? "" : "s",
                      " (", megabytes(folded_bytes), " of f32 constants), ", skipped,
                      " left packed (over the budget)\n");
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

}  // namespace mase::graph
