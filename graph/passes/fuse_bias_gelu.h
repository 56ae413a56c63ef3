// graph/passes/fuse_bias_gelu.h — pattern fusion on a traced graph: Linear (with a bias) then
// GELU becomes a linear without bias then bias_gelu (autograd/ops/gelu.cpp), BERT's FFN first
// half in one pass over the (B, T, I) activations instead of two (bias add, then GELU).
//
//   x -> [call_module Linear dense] -> [call_module GELU]          (the traced, unfused model)
//   x -> linear(x, dense.weight) -> bias_gelu(·, dense.bias)        (after this pass)
//
// Matched: a call_module GELU (exactly nn::GELU) or a call_function gelu whose input is a
// dense layer with a bias, read by nothing else: a call_module exactly nn::Linear, or a
// linear(x, w, b) call (a folded LoRA or MXINT8 layer; match_dense, rewrite.h). A
// QuantizedLinear or a LoRA wrapper is not a plain Linear: left alone, as models/fusion.h
// leaves such blocks.
// This is the graph twin of nn::fuse_kernels' FFN half: trace an UNFUSED model (never call
// fuse_kernels before tracing), and the graph then runs the same ops as the fused eager model,
// so outputs and gradients are equal bit for bit on the CPU (tests/graph/test_fusion_passes.cpp).
// Read next: graph/passes/fuse_add_norm.h.
#pragma once
#include "graph/passes/rewrite.h"

namespace mase::graph {

FuseReport fuse_bias_gelu(Graph& g);

}  // namespace mase::graph
