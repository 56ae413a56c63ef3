// models/fusion.cpp — the fusion pass over the module tree (see fusion.h).
#include "models/fusion.h"

#include <typeinfo>

#include "models/bert.h"

namespace mase::nn {
namespace {

// Exactly an M — not a subclass, which may compute something else (a QuantizedLinear is a
// Linear, but its forward quantizes first).
template <class M>
bool exactly(const ModulePtr& m) {
  return m && typeid(*m) == typeid(M);
}

// Can split_dense take this dense child apart (with a bias when `need_bias`)?
bool splits(const ModulePtr& dense, bool need_bias) {
  if (exactly<Linear>(dense)) return !need_bias || static_cast<const Linear&>(*dense).bias.defined();
  const auto* s = dynamic_cast<const SplitBias*>(dense.get());
  return s && s->bias_splits() && (!need_bias || s->split_bias().defined());
}

bool can_fuse(const BertIntermediate& b) {
  return splits(b.dense, /*need_bias=*/true) && exactly<GELU>(b.intermediate_act_fn);
}

bool can_fuse(const BertSelfOutput& b) {
  return splits(b.dense, /*need_bias=*/false) && exactly<LayerNorm>(b.LayerNorm) &&
         (exactly<Dropout>(b.dropout) || exactly<Identity>(b.dropout));
}

// Visit every fusable block: f(block, can_fuse(block)).
template <class F>
void for_each_block(Module& model, FusionReport& r, F&& f) {
  for (auto& [path, m] : model.named_modules()) {
    if (auto* ffn = dynamic_cast<BertIntermediate*>(m.get())) {
      ++r.ffn_total;
      r.ffn += f(ffn->fused, can_fuse(*ffn));
    } else if (auto* out = dynamic_cast<BertSelfOutput*>(m.get())) {  // BertOutput too
      ++r.add_norm_total;
      r.add_norm += f(out->fused, can_fuse(*out));
    }
  }
}

}  // namespace

DenseParts split_dense(Module& dense, const Tensor& x) {
  if (auto* s = dynamic_cast<SplitBias*>(&dense)) return {s->product(x), s->split_bias()};
  const auto& lin = static_cast<const Linear&>(dense);  // the pass checked: exactly a Linear
  return {linear(x, lin.weight), lin.bias};
}

std::string FusionReport::str() const {
  return cat("fusion: ", ffn, " of ", ffn_total, " FFN blocks (bias + GELU), ", add_norm, " of ",
             add_norm_total, " Add & Norm blocks (bias + dropout + residual + LayerNorm)\n");
}

FusionReport fuse_kernels(Module& model) {
  FusionReport r;
  for_each_block(model, r, [](bool& fused, bool ok) { return fused = ok; });
  return r;
}

void unfuse_kernels(Module& model) {
  FusionReport r;
  for_each_block(model, r, [](bool& fused, bool) { return fused = false; });
}

}  // namespace mase::nn
