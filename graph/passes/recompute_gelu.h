// graph/passes/recompute_gelu.h — a rematerialisation pass for training: the FFN's GELU output
// is not kept for backward but recomputed there, trading one cheap elementwise pass for the
// largest activation of each layer.
//
// In a training step autograd keeps what backward needs. In BERT's FFN
//   h = x·W1ᵀ (B, T, I);  y = bias_gelu(h, b1) (B, T, I);  z = y·W2ᵀ
// bias_gelu keeps h (for gelu'(h + b1)) and the second linear keeps y (for dW2 = dzᵀ·y): two
// (B, T, I) tensors per layer, I = 4C, of the ~16 (B, T, C)-sized ones a layer keeps. y is a
// function of h, which is kept anyway, so this pass replaces the pair with ONE op,
//   z = bias_gelu_linear(h, b1, W2[, b2])
// that keeps h, b1, W2 and, in its backward, recomputes y = bias_gelu(h, b1) (the same
// kernel: the same bits), then computes linear's gradients with linear's own ops (dW first,
// so y is freed before dy exists) and bias_gelu's in dy's own buffer (bias_gelu_backward_,
// autograd/ops.h: the node's kernel, without the second (B, T, I) buffer). Gradients are
// eager's bit for bit (tests/graph/test_recompute_gelu.cpp); the price is one bias_gelu forward
// per layer in backward, a memory-bound pass over (B, T, I) — no GEMM is repeated. Eager
// cannot do this without changing the model's code: the compiler sees the whole graph.
// Training graphs only (graph/compile.cpp): without autograd nothing is kept anyway.
// Read next: graph/passes/memory_plan.h.
#pragma once
#include "graph/passes/rewrite.h"

namespace mase::graph {

// linear(bias_gelu(h, b), w, b2), recorded as one op that saves h, b, w, b2 but not the
// bias_gelu output (b2 may be undefined). h (..., I), b (I), w (out, I) -> (..., out).
Tensor bias_gelu_linear(const Tensor& h, const Tensor& b, const Tensor& w, const Tensor& b2);

// Rewrites every bias_gelu node whose only user is a linear reading it as its input.
FuseReport recompute_gelu(Graph& g);

}  // namespace mase::graph
