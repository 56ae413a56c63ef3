// tests/graph/test_recompute_gelu.cpp — the recompute_gelu pass (graph/passes/recompute_gelu.h):
// bias_gelu_linear's gradients by central differences and equal to the composition's bit for
// bit; in a compiled bert-tiny training step the pair is rewritten, the loss and every gradient
// stay eager's bit for bit, and exactly the GELU outputs are no longer kept after the forward.
#include "autograd/gradcheck.h"
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/recompute_gelu.h"
#include "runtime/allocator.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

TEST_CASE("recompute_gelu: bias_gelu_linear's gradients (gradcheck, and the composition's bits)") {
  const Tensor h = random_tensor({2, 3, 5}, 1, -2, 2, DType::f64).set_requires_grad(true);
  const Tensor b = random_tensor({5}, 2, -1, 1, DType::f64).set_requires_grad(true);
  const Tensor w = random_tensor({4, 5}, 3, -1, 1, DType::f64).set_requires_grad(true);
  const Tensor b2 = random_tensor({4}, 4, -1, 1, DType::f64).set_requires_grad(true);
  auto r = gradcheck([](const Tensors& x) { return bias_gelu_linear(x[0], x[1], x[2], x[3]); },
                     {h, b, w, b2});
  CHECK_MESSAGE(r.ok, r.message);
  auto r2 = gradcheck([](const Tensors& x) { return bias_gelu_linear(x[0], x[1], x[2], Tensor()); },
                      {h, b, w});
  CHECK_MESSAGE(r2.ok, r2.message);
  // f32: the same values and gradients as linear(bias_gelu(h, b), w, b2), bit for bit
  std::vector<Tensor> in;
  for (const Tensor& t : {h, b, w, b2})
    in.push_back(t.detach().to(DType::f32).set_requires_grad(true));
  const Tensor dz = random_tensor({2, 3, 4}, 5, -1, 1, DType::f32);
  auto grads = [&](bool fused) {
    for (const Tensor& t : in) t.set_grad(Tensor());
    Tensor z = fused ? bias_gelu_linear(in[0], in[1], in[2], in[3])
                     : linear(bias_gelu(in[0], in[1]), in[2], in[3]);
    backward(z, dz);
    std::vector<Tensor> g{z.detach()};
    for (const Tensor& t : in) g.push_back(t.grad());
    return g;
  };
  const auto a = grads(true), e = grads(false);
  for (size_t i = 0; i < a.size(); ++i) CHECK(bitwise_equal(a[i], e[i]));
}

TEST_CASE("recompute_gelu: a bert-tiny training step keeps eager's bits and not the GELU outputs") {
  auto model = tiny_bert();
  model->train();
  const data::Batch b = tiny_batch();
  // narrow_cls off: eager's bits, and both layers' FFN on every token
  Compiled with = compile_bert(model, {{"arena", "narrow_cls"}});
  Compiled without = compile_bert(model, {{"arena", "recompute_gelu", "narrow_cls"}});
  // what stays in use after the forward (the loss and what autograd saves), second call each
  auto kept_after_forward = [&](Compiled& c) {
    for (int i = 0; i < 2; ++i) c(bert_inputs(train_inputs(), b));  // compile, then replay
    const size_t before = allocator_stats().in_use_bytes;
    TensorMap out = c(bert_inputs(train_inputs(), b));
    return allocator_stats().in_use_bytes - before;
  };
  const size_t kept_with = kept_after_forward(with), kept_without = kept_after_forward(without);
  CHECK(count_target(with.last().graph, "bias_gelu_linear") == 2);
  CHECK(count_target(with.last().graph, "bias_gelu") == 0);
  CHECK(count_target(without.last().graph, "bias_gelu") == 2);
  // 2 layers × one (2·16, 512) f32 GELU output = 2 × 65,536 bytes (a size class exactly)
  CHECK(kept_without - kept_with == 2 * 2 * 16 * 512 * 4);
  auto got =
      loss_and_grads(*model, [&] { return with(bert_inputs(train_inputs(), b)).at("loss"); });
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(got, want);
}
