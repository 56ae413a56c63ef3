// graph/passes/fold_lora.cpp — LoRA updates folded into the weights (see fold_lora.h).
#include "graph/passes/fold_lora.h"

#include <cstring>

#include "graph/passes/memory_plan.h"
#include "graph/passes/rewrite.h"

namespace mase::graph {
namespace {

// A host copy of a parameter's values, and whether the parameter still holds them.
Tensor snapshot(const Tensor& t) { return t.detach().to(Device::cpu()).clone(); }

bool same_bits(const Tensor& copy, const Tensor& now) {
  const Tensor c = now.detach().to(Device::cpu()).contiguous();
  return c.nbytes() == copy.nbytes() && std::memcmp(c.raw_data(), copy.raw_data(), c.nbytes()) == 0;
}

}  // namespace

bool LoraFold::refresh() {
  const bool w_trains = module->weight.requires_grad();
  if (same_bits(a, module->lora_A) && same_bits(b, module->lora_B) &&
      (!w_trains || same_bits(w, module->weight)))
    return false;
  copy_(weight, module->fused()->weight);  // W + s·B·A, the same math as at compile time
  a = snapshot(module->lora_A);
  b = snapshot(module->lora_B);
  if (w_trains) w = snapshot(module->weight);
  return true;
}

FoldLoraReport fold_lora(Graph& g) {
  FoldLoraReport report;
  Rewrite r;
  for (const Node* n : g.nodes()) {
    auto* raw = module_exactly<nn::LoraLinear>(g, n);
    if (!raw) continue;
    auto m = std::static_pointer_cast<nn::LoraLinear>(g.root().submodule(n->target));
    LoraFold f{m, m->fused()->weight.detach(), snapshot(m->lora_A), snapshot(m->lora_B), {}};
    if (m->weight.requires_grad()) f.w = snapshot(m->weight);
    report.folded_bytes += f.weight.nbytes();
    report.names.push_back(n->name);
    const Tensor w = f.weight;
    const bool has_bias = m->bias.defined();
    report.folds.push_back(std::move(f));
    r.replace[n] = [n, w, has_bias](Graph& out, const NodeMap& map) {
      std::vector<Node*> args{mapped(map, n->args.at(0)),
                              out.add_node(OpKind::get_attr, out.add_constant(w), {})};
      if (has_bias) args.push_back(add_parameter(out, n->target + ".bias"));
      return out.add_node(OpKind::call_function, "linear", std::move(args), {}, n->name);
    };
  }
  if (!report.folds.empty()) g = rewrite(g, r);
  return report;
}

std::string FoldLoraReport::str() const {
  const size_t n = folds.size();
  std::string s = cat("fold_lora: folded ", n, " LoRA layer", n == 1 ? "" : "s",
                      " into their weights (", megabytes(folded_bytes), " of f32 constants)\n");
  for (const auto& name : names) s += "  " + name + "\n";
  return s;
}

}  // namespace mase::graph
