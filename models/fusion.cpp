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

bool can_fuse(const BertIntermediate& b) {
  return exactly<Linear>(b.dense) && static_cast<const Linear&>(*b.dense).bias.defined() &&
         exactly<GELU>(b.intermediate_act_fn);
}

bool can_fuse(const BertSelfOutput& b) {
  return exactly<Linear>(b.dense) && exactly<LayerNorm>(b.LayerNorm) &&
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
