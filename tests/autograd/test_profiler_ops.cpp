// tests/autograd/test_profiler_ops.cpp — the autograd engine's stamps for the step profiler
// (runtime/profiler.h): one per op in forward, one per node in backward, none for the ops a
// backward function or a composite op's body calls. On the CPU, with the host clock.
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/profiler.h"

using namespace mase;
using mase::test::random_tensor;

TEST_CASE("profiler hooks: forward ops and backward nodes are stamped once each") {
  Tensor x = random_tensor({4, 8}, 1, -1, 1, DType::f32);
  Tensor w = random_tensor({16, 8}, 2, -1, 1, DType::f32).set_requires_grad(true);
  Tensor b = random_tensor({16}, 3, -1, 1, DType::f32).set_requires_grad(true);
  profile::Profiler prof(profile::host_timeline());
  prof.begin_step();
  profile::mark_phase("forward");
  Tensor y = gelu(linear(x, w, b));          // 2 ops
  Tensor loss = sum(softmax(y) * y);     // 3 ops
  profile::mark_phase("backward");
  backward(loss);                            // 5 nodes; their inner ops are not stamped
  profile::StepProfile p = prof.end_step();
  using profile::OpClass;
  auto count = [&](OpClass c, int bwd) { return p.class_count[size_t(c)][bwd]; };
  CHECK(count(OpClass::gemm, 0) == 1);
  CHECK(count(OpClass::gemm, 1) == 1);        // linear's backward: 2 matmuls and a sum, one stamp
  CHECK(count(OpClass::elementwise, 0) == 2); // gelu, mul
  CHECK(count(OpClass::elementwise, 1) == 2);
  CHECK(count(OpClass::softmax, 0) == 1);
  CHECK(count(OpClass::softmax, 1) == 1);
  CHECK(count(OpClass::reduce, 0) == 1);
  CHECK(count(OpClass::reduce, 1) == 1);
  CHECK(p.stamps == 2 + 5 + 5 + 1);           // 2 phase starts, 5 ops, 5 nodes, the end
  CHECK(p.span_ms >= 0);
  CHECK(w.grad().defined());
}

TEST_CASE("profiler hooks: a composite op is one stamp; no profiler, no stamps") {
  Tensor q = random_tensor({1, 2, 4, 8}, 4, -1, 1, DType::f32);
  profile::Profiler prof(profile::host_timeline());
  prof.begin_step();
  profile::mark_phase("forward");
  Tensor o = sdpa(q, q, q, Tensor(), 0.0, false);
  profile::StepProfile p = prof.end_step();
  CHECK(p.class_count[size_t(profile::OpClass::attention)][0] == 1);
  CHECK(p.class_count[size_t(profile::OpClass::gemm)][0] == 0);  // sdpa's body, when composed
  CHECK(o.shape() == Shape{1, 2, 4, 8});
  CHECK_FALSE(profile::active());
  Tensor again = gelu(q);  // stamps nothing and needs no profiler
  CHECK(again.defined());
}
