// graph/passes/fuse_add_norm.h — pattern fusion on a traced graph: BERT's "Add & Norm",
// Linear (with a bias) -> Dropout (or Identity, or nothing) -> add(residual) -> LayerNorm,
// becomes a linear without bias then ONE dropout_add_layer_norm (autograd/ops/layer_norm.cpp):
// bias, dropout, residual and LayerNorm in one pass over the (B, T, C) activations.
//
//   x -> [Linear dense] -> [Dropout] -> add(·, residual) -> [LayerNorm]      (traced, unfused)
//   x -> linear(x, dense.weight) -> dropout_add_layer_norm(·, dense.bias, residual,
//                                                         LayerNorm.weight, LayerNorm.bias)
//
// Matched: a call_module exactly nn::LayerNorm whose input is an add read by nothing else; one
// of the add's inputs is either the dense layer itself (a call_module nn::Linear or a
// linear(x, w, b) call: match_dense, rewrite.h) or a Dropout / Identity module of it (each
// read only by the next step of the pattern); the other input is the residual. p is the
// Dropout's (0 for Identity or no dropout node: after remove_dropout); whether the dropout is
// active is the graph's mode when it runs, as for every dropout node (graph/op_table.h).
// The graph twin of nn::fuse_kernels' Add & Norm half: trace an UNFUSED model; the fused graph
// then runs the eager fused model's ops in the same order, so outputs, gradients and dropout
// masks are equal bit for bit on the CPU (tests/graph/test_fusion_passes.cpp).
// Read next: graph/passes/dce.h, graph/compile.h (the pipeline these passes run in).
#pragma once
#include "graph/passes/rewrite.h"

namespace mase::graph {

FuseReport fuse_add_norm(Graph& g);

}  // namespace mase::graph
