// graph/passes/fold_lora.cpp — LoRA updates folded into the weights (see fold_lora.h).
#include "graph/passes/fold_lora.h"

#include <cstring>

#include "graph/passes/memory_plan.h"
#include "graph/passes/rewrite.h"

namespace mase::graph {
namespace {

// A host copy of a parameter's values, and whether the parameter still holds them.
Tensor snapshot(const Tensor& t) { return t.detach().to(Device::cpu()).clone(); }

bool same_as_copy(const Tensor& copy, const Tensor& now) {
  if (!copy.defined() || !now.defined() || copy.shape() != now.shape() || copy.dtype() != now.dtype())
    return false;
  const Tensor c = now.detach().to(Device::cpu()).contiguous();  // CPU, contiguous: no copy
  return std::memcmp(c.raw_data(), copy.raw_data(), c.nbytes()) == 0;
}

}  // namespace

bool LoraFold::refresh() {
  const nn::LoraLinear& m = *module;
  // W + s·B·A has the plan's shape only while W is (out, in) and A, B still fit it
  const bool fits = m.weight.shape() == weight.shape() && m.lora_A.ndim() == 2 &&
                    m.lora_B.ndim() == 2 && m.lora_B.size(0) == weight.size(0) &&
                    m.lora_A.size(1) == weight.size(1) && m.lora_A.size(0) == m.lora_B.size(1);
  MASE_CHECK(fits, ShapeError, "[fold_lora] expected ", path, " as compiled, W ", weight.shape(),
             ", got W ", m.weight.shape(), ", A ", m.lora_A.shape(), ", B ", m.lora_B.shape(),
             " (the layer changed: clear the compiled model, Compiled::clear())");
  const bool host = weight.is_cpu();
  if (host && same_as_copy(a, m.lora_A) && same_as_copy(b, m.lora_B) && same_as_copy(w, m.weight))
    return false;
  copy_(weight, m.fused()->weight);  // W + s·B·A from W itself, the math of compile time
  if (host) {
    a = snapshot(m.lora_A);
    b = snapshot(m.lora_B);
    w = snapshot(m.weight);
  }
  return true;
}

FoldLoraReport fold_lora(Graph& g) {
  FoldLoraReport report;
  Rewrite r;
  for (const Node* n : g.nodes()) {
    auto* raw = module_exactly<nn::LoraLinear>(g, n);
    if (!raw) continue;
    auto m = std::static_pointer_cast<nn::LoraLinear>(g.root().submodule(n->target));
    LoraFold f{m, m->fused()->weight.detach(), {}, {}, {}, n->target};
    if (f.weight.is_cpu()) {  // what refresh() compares with (fold_lora.h)
      f.a = snapshot(m->lora_A);
      f.b = snapshot(m->lora_B);
      f.w = snapshot(m->weight);
    }
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
