// graph/passes/fuse_linear_gelu.h — for inference plans: what fuse_bias_gelu leaves,
// linear then bias_gelu, becomes ONE node, linear_gelu (autograd/ops/matmul.cpp), so the
// plan runs what the eager fused model runs.
//
//   x -> linear(x, W) -> bias_gelu(·, b)       (after fuse_bias_gelu)
//   x -> linear_gelu(x, W, b)                  (after this pass)
//
// Why a node of its own: on a CPU with AMX-BF16, under --precision bf16 and without autograd,
// linear_gelu adds the bias and applies GELU to each 32 × 32 block of the GEMM's output while
// it is still in L1 — the (B, T, I) intermediate is written once instead of written, read and
// written again (docs/performance.md, "bf16 eval: GELU in the tile store"). Everywhere else it
// runs the composition, the same two kernels as before, so the pass costs nothing where it
// cannot help and the plan's bits are eager's in every case.
// Eval plans only (graph/compile.cpp): a training plan keeps linear and bias_gelu apart, since
// recompute_gelu (recompute_gelu.h) fuses bias_gelu with the Linear AFTER it instead.
// Matched: bias_gelu(y, b) whose y is a linear(x, W) call without bias or attributes that
// nothing else reads. Read next: graph/passes/fuse_add_norm.h.
#pragma once
#include "graph/passes/rewrite.h"

namespace mase::graph {

FuseReport fuse_linear_gelu(Graph& g);

}  // namespace mase::graph
