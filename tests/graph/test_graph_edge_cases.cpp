// tests/graph/test_graph_edge_cases.cpp — edge cases of the graph passes and of compile's plan
// cache that once went wrong: each test names the bug it guards against.
#include "../models/temp_dir.h"
#include "compile_helpers.h"
#include "graph/export.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/narrow_cls.h"
#include "graph/compile.h"
#include "models/lora.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

// fold_lora replaced each LoRA layer by a detached constant W + s·B·A: with autograd on (an
// eval-mode fine-tuning step, dropout off), the adapters got no gradient at all; and a plan
// folded under no-grad was replayed with grad on.
TEST_CASE("edge: an eval plan with autograd on keeps the LoRA adapters' gradients") {
  auto model = lora_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  const data::Batch b = small_batch();
  const std::string a = "bert.encoder.layer.0.attention.self.query.lora_A";
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  REQUIRE(want.at(a).defined());
  SUBCASE("compiled with grad on") {
    auto got = loss_and_grads(*model, [&] {
      return compiled(bert_inputs(train_inputs(), b)).at("loss");
    });
    REQUIRE(got.at(a).defined());
    CHECK(rel_diff(got.at(a), want.at(a)) < 1e-4);
  }
  SUBCASE("compiled under no-grad first, then replayed with grad on") {
    {
      NoGradGuard ng;
      compiled(bert_inputs(train_inputs(), b));
      CHECK(!compiled.last().lora_folds.empty());  // the inference plan folds
    }
    auto got = loss_and_grads(*model, [&] {
      return compiled(bert_inputs(train_inputs(), b)).at("loss");
    });
    REQUIRE(got.at(a).defined());
    CHECK(rel_diff(got.at(a), want.at(a)) < 1e-4);
  }
}

// A compiled graph (fused, narrowed, LoRA folded) is a graph like any other: it exports and
// reloads to the same outputs, in eval and in training (the rows_* attrs of narrow_cls).
TEST_CASE("edge: a compiled graph exports and reloads to the same outputs") {
  for (bool training : {false, true}) {
    INFO("training " << training);
    auto model = lora_bert();
    model->train(training);
    Compiled compiled = compile_bert(model);
    const data::Batch b = small_batch();
    NoGradGuard ng;
    manual_seed(3);
    TensorMap want = compiled(bert_inputs(train_inputs(), b));
    const Graph& g = compiled.last().graph;
    test::TempDir dir;
    export_graph(g, dir.path.string());
    Graph r = load_graph(dir.path.string());
    manual_seed(3);
    TensorMap got = r.run(graph_inputs(r, b));
    CHECK(bitwise_equal(got.at("logits"), want.at("logits")));
    CHECK(bitwise_equal(got.at("loss"), want.at("loss")));
  }
}

// Outputs that are an input, a parameter, a view of an intermediate and the same node twice:
// every replay (the arena's too) returns eager's values, and outputs kept from earlier calls
// are never overwritten by later ones.
TEST_CASE("edge: outputs that are inputs, parameters or views survive later replays") {
  auto m = std::make_shared<test::Scaled>();
  m->eval();
  auto forward = [m](const TensorMap& in) {
    Tensor y = (*m)(in.at("x"));
    return NamedTensors{{"y", y},
                        {"x", in.at("x")},
                        {"gain", m->gain},
                        {"t", transpose(y, 0, 1)},
                        {"y2", y}};
  };
  Compiled compiled = compile(m, forward);
  NoGradGuard ng;
  std::vector<Tensor> xs;
  std::vector<TensorMap> outs;
  for (uint64_t s = 0; s < 5; ++s) {
    xs.push_back(random_tensor({5, 4}, 100 + s, -1.0, 1.0, DType::f32));
    outs.push_back(compiled({{"x", xs.back()}}));
  }
  CHECK(compiled.compiles() == 1);
  CHECK(compiled.arena_runs() == 3);  // calls 3 to 5 ran out of the arena
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("call " << i);
    Tensor want = (*m)(xs[i]);
    CHECK(bitwise_equal(outs[i].at("y"), want));
    CHECK(bitwise_equal(outs[i].at("y2"), want));
    CHECK(bitwise_equal(outs[i].at("t"), transpose(want, 0, 1)));
    CHECK(bitwise_equal(outs[i].at("x"), xs[i]));
    CHECK(bitwise_equal(outs[i].at("gain"), m->gain));
  }
}

namespace {

// y = LayerNorm(Dropout(relu(x)) + Linear(x)): the add's dropout side is no dense, its other
// side is a Linear without a dropout.
struct DropNotDense : nn::Module {
  nn::ModulePtr lin, drop, ln;
  DropNotDense() {
    register_module("lin", lin, nn::ModulePtr(std::make_shared<nn::Linear>(4, 4)));
    register_module("drop", drop, nn::ModulePtr(std::make_shared<nn::Dropout>(0.5)));
    register_module("ln", ln, nn::ModulePtr(std::make_shared<nn::LayerNorm>(4)));
  }
  std::string type_name() const override { return "DropNotDense"; }
  bool is_leaf() const override { return false; }
  Tensor forward(const Tensor& x) override { return (*ln)((*drop)(relu(x)) + (*lin)(x)); }
};

}  // namespace

// fuse_add_norm tried the dropout side first, failed (its input is no dense), then matched the
// bare Linear on the other side but kept the failed side's p: the fused op dropped out a branch
// that has no dropout (training outputs wrong).
TEST_CASE("edge: fuse_add_norm takes p from the matched side only") {
  auto m = std::make_shared<DropNotDense>();
  m->train();
  const Tensor x = random_tensor({6, 4}, 7, -1.0, 1.0, DType::f32);
  Graph g = test::trace_unary(m, x);
  FuseReport r = fuse_add_norm(g);
  REQUIRE(r.fused == 1);
  const graph::Node* fused = nullptr;
  for (const graph::Node* n : g.nodes())
    if (n->target == "dropout_add_layer_norm") fused = n;
  REQUIRE(fused != nullptr);
  CHECK(attr_double(fused->attrs, "p") == 0.0);
  NoGradGuard ng;
  manual_seed(9);
  Tensor want = (*m)(x);
  manual_seed(9);
  Tensor got = g.run({{"x", x}}).at("y");
  CHECK(max_abs_diff(got, want) < 1e-5);
}

