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

// The FFN of a layer runs in row chunks when both its blocks fused, both denses have row
// products (the Add & Norm's bias is added there, as in the fused block), and the hidden size
// is at most kChunkMaxHidden. Why the limit: chunking saves writing the (M, I) fp32
// intermediate out and reading it back, which costs about as much as computing it when the
// first GEMM's K (the hidden size) is short, and nothing when the GEMMs dominate. Measured
// (mase-bench --suite int8, vs_whole_ffn, Zen 5, 2 threads): 1.10–1.18× for bert-tiny (128),
// 1.03–1.10× bert-mini (256), 0.98–1.00× bert-small (512), whose chunks of 16 rows (I = 2048)
// re-read the second weight from L2 for every chunk.
constexpr int64_t kChunkMaxHidden = 256;
const SplitBias* row_product(const ModulePtr& dense) {
  const auto* s = dynamic_cast<const SplitBias*>(dense.get());
  return s && s->has_product_rows() ? s : nullptr;
}
bool can_chunk(const BertLayer& l) {
  if (!l.intermediate->fused || !l.output->fused) return false;
  const int64_t hidden = static_cast<const LayerNorm&>(*l.output->LayerNorm).weight.numel();
  return hidden <= kChunkMaxHidden && row_product(l.intermediate->dense) && row_product(l.output->dense);
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
