// models/fusion.cpp — the fusion pass over the module tree (see fusion.h).
#include "models/fusion.h"

#include <typeinfo>

#include "autograd/ops.h"
#include "models/bert.h"
#include "runtime/error.h"

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

// The FFN of a layer runs in row chunks when both its blocks fused and both denses have row
// products (the Add & Norm's bias is added there, as in the fused block).
const SplitBias* row_product(const ModulePtr& dense) {
  const auto* s = dynamic_cast<const SplitBias*>(dense.get());
  return s && s->has_product_rows() ? s : nullptr;
}
bool can_chunk(const BertLayer& l) {
  return l.intermediate->fused && l.output->fused && row_product(l.intermediate->dense) &&
         row_product(l.output->dense);
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
  // after the blocks: a layer's chunked FFN needs its blocks' verdicts
  for (auto& [path, m] : model.named_modules())
    if (auto* layer = dynamic_cast<BertLayer*>(m.get())) r.ffn_chunks += f(layer->ffn_chunks, can_chunk(*layer));
}

}  // namespace

DenseParts split_dense(Module& dense, const Tensor& x) {
  if (auto* s = dynamic_cast<SplitBias*>(&dense)) return {s->product(x), s->split_bias()};
  const auto& lin = static_cast<const Linear&>(dense);  // the pass checked: exactly a Linear
  return {linear(x, lin.weight), lin.bias};
}

void SplitBias::product_rows(const float*, int64_t, float*) const {
  throw ConfigError("[product_rows] this module has no row product (has_product_rows() is false)");
}

Tensor ffn_in_chunks(const SplitBias& dense1, const Tensor& b1, const SplitBias& dense2,
                     const Tensor& a) {
  MASE_CHECK(dense1.has_product_rows() && dense2.has_product_rows(), ConfigError,
             "[ffn_in_chunks] both denses need row products (SplitBias::has_product_rows)");
  return bias_gelu_in_row_chunks(
      a, [&](const float* x, int64_t rows, float* y) { dense1.product_rows(x, rows, y); }, b1,
      [&](const float* x, int64_t rows, float* y) { dense2.product_rows(x, rows, y); },
      a.size(-1));  // W2's output is the residual's width
}

std::string FusionReport::str() const {
  std::string s = cat("fusion: ", ffn, " of ", ffn_total, " FFN blocks (bias + GELU), ", add_norm,
                      " of ", add_norm_total, " Add & Norm blocks (bias + dropout + residual + LayerNorm)\n");
  if (ffn_chunks) s += cat("  ", ffn_chunks, " layer(s) run their FFN in row chunks when not training\n");
  return s;
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
