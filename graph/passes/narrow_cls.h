// graph/passes/narrow_cls.h — a pass eager cannot make: the classifier reads one row of the
// last layer, so the last layer computes that row only.
//
// BertForSequenceClassification pools the [CLS] token (HF's BertPooler): of the last encoder
// layer's (B, T, H) output only row 0 of each sequence reaches the logits —
//   h = layer_L(h_prev)            (B, T, H)     every token
//   pooled = tanh(dense(h[:, 0]))  (B, H)        one token
// A row of the layer's output depends on every token's keys and values, but only on its own
// query, attention output, LayerNorms and FFN: those act on each token alone. So the pass
// moves the select up the graph, through every node that acts token by token, until it meets
// a value something else also reads (the layer's input, which K and V read in full); there it
// takes a slice of one token. What runs after it:
//   K, V = linear(h_prev)                       (B, T, H)    unchanged
//   q    = linear(h_prev[:, 0:1])               (B, 1, H)    1 query row instead of T
//   a    = sdpa(q, K, V, mask)                  (B, NH, 1, HS)
//   h    = FFN, LayerNorms on (B, 1, ·)         the rest of the layer on one row
// The K and V projections stay (2 of the layer's 12·H² multiply-adds per token), so about 5/6
// of one layer goes: 5/12 of bert-tiny's encoder (2 layers), a fifth of bert-small's (4), a
// fourteenth of bert-base's (12); measured ×1.76, ×1.27 and ×1.08 eval (docs/lab4.md). No library or eager framework does this on
// its own: it needs the whole graph, to see that nothing reads the other rows.
//
// Which nodes move (a node is narrowed when everything that reads it is narrowed, and each of
// those reads it as a token-wise input): Linear, LayerNorm, GELU, Dropout modules (exactly
// those types: a quantized or LoRA wrapper is left whole), the functions linear, gelu,
// bias_gelu, linear_gelu, layer_norm, dropout, dropout_add_layer_norm, add (of two computed
// values, not a parameter), contiguous, transpose, view/reshape that keep (B, T) in front,
// and sdpa through its query only. The token axis is found from the `input_ids`
// placeholder's (B, T).
// A limit: a view is judged by its OUTPUT shape, and its input is taken to have the token axis
// at 1 too. BERT's views all do; a model that flattens to (B·T, C) and views back to (B, T, C)
// would be sliced on C (a shape error at the first replay, never a wrong value). Checking the
// input needs node shapes kept through the fusion passes, which make nodes without metadata.
//
// In training the narrowed dropouts must draw eager's
// masks: dropout draws each element's mask from its index in the full tensor, and a (B, 1, H)
// tensor would draw the masks of tokens 0..B−1 of the first sequence instead. So the narrowed
// dropout_add_layer_norm and sdpa nodes carry a row map (attrs rows_period 1, rows_stride T,
// rows_first i: runtime/philox.h's RowMap): row b draws row b·T + i of the stream, and
// the generator advances by the full tensor's count. Dropout modules are not narrowed in
// training (they take no map), and the pass refuses when anything else draws between the
// region's nodes (moving them would reorder the generator's offsets). Both devices' fused
// kernels take the map (runtime/cpu/layer_norm.cpp, sdpa.cpp; cuda/layer_norm.cu,
// sdpa_tile.cuh's fill_dropout_tile); the CUDA side's equality with eager is tested by
// tests/graph/test_narrow_cls.cpp's GPU case (written 2026-11-28 without a GPU: it runs, or says
// skipped, where one is); the CUDA kernels' row arithmetic is also checked on the CPU, in the
// CUDA emulation CI runs (scripts/cuda_emu/rows_check.cpp).
// Outputs are eager's up to fp32 reassociation, not bit for bit: a Linear over B rows may sum in
// another order than one over B·T rows (tests/graph/test_narrow_cls.cpp); so are gradients.
// Read next: graph/passes/rewrite.h (the tool), graph/compile.h (where it runs).
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

struct NarrowReport {
  int64_t narrowed = 0;              // nodes now computing one token
  std::vector<std::string> sliced;   // the values a slice of one token is taken of
  int64_t tokens = 0;                // T, the rows each narrowed node no longer computes
  std::string skipped;               // why nothing was narrowed (empty when something was)
  // "narrow_cls: 23 nodes of the last layer compute 1 of 256 tokens (sliced: a, b)"
  std::string str() const;
};

// training: the graph runs in training mode, see above; cuda: on a GPU, where a narrowed
// attention with dropout needs a head size the fused CUDA kernel has (32, 64, 128:
// runtime/kernels/sdpa.h), else nothing is narrowed and the report says why.
NarrowReport narrow_cls(Graph& g, bool training = false, bool cuda = false);

}  // namespace mase::graph
