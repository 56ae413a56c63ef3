// graph/passes/recompute_gelu.cpp — the GELU output recomputed in backward (see
// recompute_gelu.h).
#include "graph/passes/recompute_gelu.h"

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace mase::graph {

Tensor bias_gelu_linear(const Tensor& h, const Tensor& b, const Tensor& w, const Tensor& b2) {
  Tensor hs = h.detach(), bs = b.detach(), ws = w.detach(), b2s = b2.defined() ? b2.detach() : b2;
  Tensor z;
  {
    Tensor y;
    {
      NoGradGuard ng;
      y = bias_gelu(h, b);
    }
    // grad mode stays on for the GEMM, on inputs that need no gradient (nothing is recorded, y
    // dies with this scope): eager's training forward calls linear with grad on, and under
    // NoGradGuard linear may take another kernel (the packed inference GEMM,
    // autograd/ops/matmul.cpp), whose sums round differently
    z = linear(y, ws, b2s);
  }
  Tensors inputs{h, b, w};
  if (b2.defined()) inputs.push_back(b2);  // as linear records: defined inputs only
  return record("bias_gelu_linear", inputs, z, [hs, bs, ws, b2s](const Tensor& dz) -> Tensors {
    const int64_t in = ws.size(1), out = ws.size(0), rows = hs.numel() / in;
    // y = bias_gelu(h, b) again: the same kernel, the same bits as the forward's
    Tensor y = bias_gelu(hs, bs);
    // linear's backward (autograd/ops/matmul.cpp), the same ops in the same form, so the same
    // bits; dW first, so that y dies before dy is made: y and dy are never alive together
    const Tensor dz2 = reshape(contiguous(dz), {rows, out});
    Tensors grads(b2s.defined() ? 4 : 3);
    grads[2] = matmul(transpose(dz2, 0, 1), reshape(y, {rows, in}));  // dW = dzᵀ·y
    if (b2s.defined()) grads[3] = sum(dz2, {0});                        // db2 = Σ dz
    y = Tensor();
    // dy = dz·W, then bias_gelu's backward in dy's own buffer: dh = dy·gelu'(h + b), db = Σ dh.
    // bias_gelu's node would allocate dh beside dy; here dy is ours alone, so the step's peak
    // (which falls here, in the last layer's FFN) holds one (rows, I) gradient, not two.
    const Tensor dy = reshape(matmul(dz2, ws), hs.shape());
    grads[1] = bias_gelu_backward_(dy, hs, bs);
    grads[0] = dy;
    return grads;
  });
}

FuseReport recompute_gelu(Graph& g) {
  FuseReport report{"recompute_gelu", "bias_gelu + linear -> bias_gelu_linear (GELU recomputed)",
                    0, {}};
  Rewrite r;
  for (const Node* act : g.nodes()) {
    if (act->op != OpKind::call_function || act->target != "bias_gelu" ||
        act->users.size() != 1 || act->args.size() != 2)
      continue;
    const Node* lin = *act->users.begin();
    if (lin->op != OpKind::call_function || lin->target != "linear" || lin->args.at(0) != act ||
        lin->args.size() < 2 || lin->args.size() > 3 || !lin->attrs.empty())
      continue;
    r.drop.insert(act);
    r.replace[lin] = [act, lin](Graph& out, const NodeMap& map) {
      std::vector<Node*> args{mapped(map, act->args[0]), mapped(map, act->args[1]),
                              mapped(map, lin->args[1])};
      if (lin->args.size() == 3) args.push_back(mapped(map, lin->args[2]));
      return out.add_node(OpKind::call_function, "bias_gelu_linear", std::move(args), {},
                          lin->name);
    };
    report.names.push_back(act->name + " + " + lin->name);
  }
  report.fused = static_cast<int64_t>(report.names.size());
  if (report.fused) g = rewrite(g, r);
  return report;
}

}  // namespace mase::graph
