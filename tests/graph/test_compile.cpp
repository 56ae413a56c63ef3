// tests/graph/test_compile.cpp — graph::compile (graph/compile.h): a cache hit on the same
// signature, a recompile on a new shape or mode (never a stale plan), outputs and gradients
// equal to the eager fused model bit for bit (small BERT and bert-tiny end to end), the
// first-call split, passes turned off by name, and a plan that refuses another shape.
#include "compile_helpers.h"
#include "graph/compile.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

TEST_CASE("compile: the same signature replays and a new one compiles again") {
  auto model = small_bert();
  model->eval();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});  // eager's bits (see below)
  const data::Batch b7 = small_batch(7), b5 = small_batch(5), b7b = small_batch(7, 9);
  NoGradGuard ng;
  compiled(bert_inputs(eval_inputs(), b7));
  CHECK(compiled.compiles() == 1);
  CHECK(compiled.replays() == 0);
  Tensor y7 = compiled(bert_inputs(eval_inputs(), b7b)).at("logits");  // other values, same shape
  CHECK(compiled.compiles() == 1);
  CHECK(compiled.replays() == 1);
  Tensor y5 = compiled(bert_inputs(eval_inputs(), b5)).at("logits");  // another bucket length
  CHECK(compiled.compiles() == 2);
  CHECK(compiled.cache_size() == 2);
  CHECK(compiled.last().signature.shapes[0] == Shape{3, 5});
  nn::fuse_kernels(*model);
  CHECK(bitwise_equal(y5, eager_outputs(*model, b5, false).at("logits")));
  CHECK(bitwise_equal(y7, eager_outputs(*model, b7b, false).at("logits")));
  CHECK(compiled(bert_inputs(eval_inputs(), b5)).at("logits").shape() == Shape{3, 2});
  CHECK(compiled.compiles() == 2);  // both plans kept
  model->train();                   // the mode is part of the signature
  compiled(bert_inputs(eval_inputs(), b5));
  CHECK(compiled.compiles() == 3);
  CHECK(compiled.last().signature.str() ==
        "input_ids (3, 5) i32, attention_mask (3, 5) i32; train");
}

TEST_CASE("compile: a plan refuses inputs of another shape") {
  auto model = small_bert();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  compiled(bert_inputs(eval_inputs(), small_batch(7)));
  const Plan& plan = compiled.last().plan;
  const data::Batch b5 = small_batch(5);
  NamedTensors in{{"input_ids", b5.input_ids}, {"attention_mask", b5.attention_mask}};
  CHECK_THROWS_WITH_AS(plan.run(in),
                       doctest::Contains("[plan] expected input input_ids of shape (3, 7)"),
                       ShapeError);
}

TEST_CASE("compile: bert-tiny end to end equals the eager fused model (eval and train)") {
  auto model = tiny_bert();
  const data::Batch b = tiny_batch();
  // narrow_cls off: it changes the work (one token in the last layer), so its outputs equal
  // eager's within fp32 reassociation, not bit for bit (test_narrow_cls.cpp)
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});
  model->eval();
  Tensor y;
  {
    NoGradGuard ng;
    y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  }
  const CompiledGraph& cg = compiled.last();
  CHECK(count_target(cg.graph, "linear_gelu") == 2);  // eval: fuse_linear_gelu after fuse_bias_gelu
  CHECK(count_target(cg.graph, "bias_gelu") == 0);
  CHECK(count_target(cg.graph, "dropout_add_layer_norm") == 4);
  CHECK(cg.memory_planned);
  CHECK(cg.first_call.trace > 0);
  CHECK(cg.first_call.first_run > 0);
  CHECK(cg.first_call.str().starts_with("first call "));
  model->train();
  auto compiled_grads = loss_and_grads(
      *model, [&] { return compiled(bert_inputs(train_inputs(), b)).at("loss"); });
  nn::fuse_kernels(*model);  // after compiling: the trace saw the unfused model
  auto eager_grads =
      loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(compiled_grads, eager_grads);
  model->eval();
  NoGradGuard ng;
  CHECK(bitwise_equal(y, eager_outputs(*model, b, false).at("logits")));
}

TEST_CASE("compile: a pass turned off by name does not run") {
  auto model = small_bert();
  model->eval();
  Compiled compiled = compile_bert(model, {{"fuse_bias_gelu", "narrow_cls", "memory_plan"}});
  NoGradGuard ng;
  Tensor y = compiled(bert_inputs(eval_inputs(), small_batch())).at("logits");
  const CompiledGraph& cg = compiled.last();
  CHECK(count_target(cg.graph, "bias_gelu") == 0);
  CHECK(count_target(cg.graph, "dropout_add_layer_norm") == 4);
  CHECK(!cg.memory_planned);
  std::vector<std::string> ran;
  for (const PassRun& p : cg.passes) ran.push_back(p.name);
  CHECK(ran == std::vector<std::string>{"remove_dropout", "fold_lora", "fuse_linear_gelu",
                                        "fuse_add_norm", "fold_mxint8", "dce"});
  CHECK(count_target(cg.graph, "linear_gelu") == 0);  // nothing left for it to match
  fuse_only(*model, false, true);
  CHECK(bitwise_equal(y, eager_outputs(*model, small_batch(), false).at("logits")));
  CHECK_THROWS_WITH_AS(compile_bert(model, {{"fuse_everything"}}),
                       doctest::Contains("expected a pass among"), ConfigError);
}
