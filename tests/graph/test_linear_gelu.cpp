// tests/graph/test_linear_gelu.cpp — linear_gelu (autograd/ops/matmul.cpp), BERT's FFN first half
// gelu(x·Wᵀ + b): bias_gelu(linear(x, W), b) everywhere, except for inference under
// --precision bf16 on AMX tiles, where the GEMM applies GELU as it stores (cpu::gemm_bias_gelu).
// There it must give the composition's bits, record one op the graph interpreter can replay,
// and read a frozen weight's tiles; with autograd on it is the composition, gradients and all.
// A compiled bf16 eval plan (fuse_linear_gelu) runs it fused as well, with eager's bits.
// The AMX cases are *skipped* on CPUs without AMX-BF16; the fp32 and autograd cases run anywhere.
#include <algorithm>

#include "autograd/frozen.h"
#include "autograd/ops.h"
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/op_table.h"
#include "op_names.h"
#include "runtime/parallel.h"
#include "runtime/kernels/bf16.h"

using namespace mase;
using namespace mase::test;

namespace {

// (B, T, C) = (2, 75, 128) rows into a 4·C-wide FFN: 150 × 512 × 128 multiply-adds, enough
// for eager bf16 to take the AMX path (≥ kAmxMinWork); 75 rows: a chunk's edge mid-tile
struct Ffn {
  Tensor x = random_tensor({2, 75, 128}, 1, -1, 1, DType::f32);
  Tensor w = random_tensor({512, 128}, 2, -0.2, 0.2, DType::f32);
  Tensor b = random_tensor({512}, 3, -1, 1, DType::f32);
};

}  // namespace

TEST_CASE("linear_gelu: the composition's bits and gradients wherever no kernel fuses it") {
  Ffn f;
  f.w.set_requires_grad(true);
  f.b.set_requires_grad(true);
  Tensor got = linear_gelu(f.x, f.w, f.b);  // fp32, autograd on: the composition itself
  Tensor want = bias_gelu(linear(f.x, f.w), f.b);
  CHECK(bitwise_equal(got, want));
  backward(sum(got));
  const Tensor dw = f.w.grad(), db = f.b.grad();
  f.w.set_grad(Tensor());
  f.b.set_grad(Tensor());
  backward(sum(want));
  CHECK(bitwise_equal(dw, f.w.grad()));
  CHECK(bitwise_equal(db, f.b.grad()));
  Bf16Scope bf16;  // bf16 with autograd on: still the composition (its backward needs x·Wᵀ)
  OpNames names;
  got = linear_gelu(f.x, f.w, f.b);
  CHECK(names.ops == std::vector<std::string>{"linear", "bias_gelu"});
  CHECK(got.requires_grad());
  CHECK(bitwise_equal(got, bias_gelu(linear(f.x, f.w), f.b)));
  // the composition's checks: a bias of the wrong width is refused, with or without autograd
  NoGradGuard ng;
  CHECK_THROWS_AS(linear_gelu(f.x, f.w, random_tensor({511}, 4, -1, 1, DType::f32)), ShapeError);
}

TEST_CASE("linear_gelu: GELU in the AMX store for bf16 inference, the composition's bits, one op") {
  if (!cpu::amx_bf16_available()) return skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  Ffn f;
  Bf16Scope bf16;
  NoGradGuard ng;
  const Tensor want = bias_gelu(linear(f.x, f.w), f.b);
  OpNames names;
  const Tensor got = linear_gelu(f.x, f.w, f.b);
  CHECK(names.ops == std::vector<std::string>{"linear_gelu"});
  CHECK(got.shape() == Shape{2, 75, 512});
  CHECK(bitwise_equal(got, want));
  // the graph interpreter's entry for the recorded op replays it
  const auto& info = graph::op_info("linear_gelu");
  CHECK(bitwise_equal(info.run({f.x, f.w, f.b}, {}, false), want));
  // a transposed view of W (read with the transpose flag, not copied) gives the same bits
  const Tensor wt = contiguous(transpose(f.w, 0, 1));
  CHECK(bitwise_equal(linear_gelu(f.x, transpose(wt, 0, 1), f.b), want));
  // frozen: the weight's tiles packed once, and really read (W zeroed behind the table's back)
  FrozenWeights table;
  REQUIRE(table.add(f.w));
  REQUIRE(table.find_amx(f.w) != nullptr);
  FrozenScope scope(&table);
  CHECK(bitwise_equal(linear_gelu(f.x, f.w, f.b), want));
  fill_(f.w, 0.0);
  CHECK(bitwise_equal(linear_gelu(f.x, f.w, f.b), want));
}

// graph/passes/fuse_linear_gelu.h: an eval plan runs linear_gelu where the eager fused model
// does, so a compiled bf16 eval on AMX fuses GELU into the store too, with eager's bits.
TEST_CASE("compile: a bf16 eval plan on AMX runs linear_gelu fused, the eager fused model's bits") {
  if (!cpu::amx_bf16_active()) return skip("this CPU has no AMX-BF16 (or it is capped off)");
  auto model = tiny_bert();  // 2 × 16 tokens into I 512 from H 128: past kAmxMinWork
  model->eval();
  const data::Batch b = tiny_batch();
  Bf16Scope bf16;
  // narrow_cls off: a Linear over B rows sums in another order than over B·T rows
  graph::Compiled compiled = graph::compile_bert(model, {{"narrow_cls"}});
  NoGradGuard ng;
  const graph::NamedTensors in = graph::bert_inputs(eval_inputs(), b);
  compiled(in);  // compiles
  OpNames names;
  const Tensor got = compiled(in).at("logits");  // a replay
  CHECK(std::count(names.ops.begin(), names.ops.end(), "linear_gelu") == 2);  // fused: one op
  CHECK(std::count(names.ops.begin(), names.ops.end(), "bias_gelu") == 0);
  CHECK(count_target(compiled.last().graph, "linear_gelu") == 2);
  nn::fuse_kernels(*model);
  CHECK(bitwise_equal(got, eager_outputs(*model, b, false).at("logits")));
}
