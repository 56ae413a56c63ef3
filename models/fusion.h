// models/fusion.h — the fusion pass: which BERT blocks run their fused kernels.
//
// BERT's forward has a reference form — each leaf module called through its operator(), one op
// per module (models/bert_encoder.cpp) — and fused forms that do the same maths in fewer
// passes over memory: bias + GELU (autograd/ops/gelu.cpp) for the FFN's first half, and bias +
// dropout + residual + LayerNorm (autograd/ops/layer_norm.cpp) for each "Add & Norm". A model
// never decides this itself. fuse_kernels() is a pass over the module tree, run by whoever
// runs the model (mase-train, mase-bench, the searches): it sets the `fused` flag of every
// BertIntermediate / BertSelfOutput / BertOutput whose children are exactly the plain modules
// (Linear, with a bias in the FFN; GELU, LayerNorm, Dropout or Identity), and leaves the
// others — a QuantizedLinear, a LoRA wrapper — on the reference path, which calls them. One
// kind of non-plain Linear opts in: a module that is a SplitBias (below) and says its bias
// splits off — the integer Linear of quant/integer_linear.h, whose product runs in int8 and
// whose bias the fused pass adds as it would a plain Linear's. Its row products (below) also
// give a third form, for inference only: the whole FFN of a BertLayer a chunk of rows at a
// time, its intermediate never leaving the cache (ffn_in_chunks).
//
// Replacing a child (Module::replace_submodule) clears its parent's flag: run the pass again
// after passes that swap modules. A traced model (graph/) shows whichever form runs: the fused
// ops as call_function nodes, or the leaf modules as call_module nodes; trace before fusing
// when a graph pass should see the Linears. Fused and reference forms compute the same numbers
// up to float rounding and draw the same dropout masks (tests/models/test_fusion.cpp).
//
// Read next: autograd/ops/gelu.cpp and layer_norm.cpp (the fused ops), models/bert_encoder.cpp
// (the two forms side by side).
#pragma once
#include <string>

#include "models/module.h"

namespace mase::nn {

// A Linear-like module y = product(x) + bias that lets a fused block add the bias in its own
// pass (bias + GELU, bias + dropout + residual + LayerNorm). nn::Linear is fused directly and is
// not one: its subclasses (QuantizedLinear) compute something else and must not inherit a yes.
class SplitBias {
 public:
  virtual ~SplitBias() = default;
  // May forward(x) be replaced by product(x) + split_bias()? (false when forward does more
  // after the bias, e.g. an output quantizer)
  virtual bool bias_splits() const = 0;
  virtual Tensor product(const Tensor& x) = 0;   // x (..., in) -> (..., out), without the bias
  virtual const Tensor& split_bias() const = 0;  // (out), or undefined when there is none
  // Optional: the product of `rows` rows of x (row-major, in_features wide, f32) into y (rows,
  // out_features), on the calling thread alone, without autograd — what ffn_in_chunks calls
  // for one chunk. Modules that have it say so in has_product_rows().
  virtual bool has_product_rows() const { return false; }
  virtual void product_rows(const float* x, int64_t rows, float* y) const;
};

// The dense child of a block the pass fused, computed in two parts: x·Wᵀ and the bias to add.
struct DenseParts {
  Tensor product, bias;
};
DenseParts split_dense(Module& dense, const Tensor& x);

// The FFN in row chunks, for inference: W2·gelu(W1·a + b1) for a (..., C), without W2's bias
// (the Add & Norm after it adds b2), computed chunk by chunk of rows — each chunk's (rows, I)
// intermediate is made, passed through GELU and consumed while it sits in the core's L2, so
// the whole (M, I) activation (16 MB for bert-tiny at 8192 tokens, 4× the block's input) never
// goes to memory and back. Every step is row-wise, so the result is the same bits as the
// unchunked fused block. Needs both denses with has_product_rows() (the integer Linear of
// quant/integer_linear.h has it); no autograd. Measured: docs/performance.md, "the afternoon".
Tensor ffn_in_chunks(const SplitBias& dense1, const Tensor& b1, const SplitBias& dense2,
                     const Tensor& a);

struct FusionReport {
  int ffn = 0, ffn_total = 0;            // BertIntermediate: bias + GELU
  int add_norm = 0, add_norm_total = 0;  // BertSelfOutput / BertOutput: Add & Norm
  int ffn_chunks = 0;                    // BertLayer: the whole FFN in row chunks (inference)
  // "fusion: 2 of 2 FFN blocks (bias + GELU), 4 of 4 Add & Norm blocks …\n", and when some
  // layers run their FFN in chunks, "  2 layer(s) run their FFN in row chunks when not training\n"
  std::string str() const;
};

// Fuse every block of `model` that can be fused (see above); returns what it did. A BertLayer
// whose two FFN blocks both fused, whose denses have row products and whose hidden size is at
// most 256 (where it was measured to pay: fusion.cpp) also gets `ffn_chunks`: under
// NoGradGuard it then runs ffn_in_chunks between them (models/bert_encoder.cpp).
FusionReport fuse_kernels(Module& model);
// Every block back to the reference path (what a freshly built model runs).
void unfuse_kernels(Module& model);

}  // namespace mase::nn
