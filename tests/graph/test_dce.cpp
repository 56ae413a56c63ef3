// tests/graph/test_dce.cpp — dead-code elimination as a pass (graph/passes/dce.h): nothing to
// do on a fresh trace; a dropout whose users were rewired (but not erased) is removed and
// named, and the outputs do not change in eval mode; in training an unread dropout stays (its
// mask draw moves the generator, as eager's does).
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/dce.h"
#include "graph/passes/dropout.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

TEST_CASE("dce: removes nothing on a fresh trace") {
  auto model = small_bert();
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  const size_t n = g.size();
  DceReport r = dead_code_elimination(g);
  CHECK(r.removed == 0);
  CHECK(g.size() == n);
  CHECK(r.str() == "dce: removed 0 dead nodes\n");
}

TEST_CASE("dce: removes the dead nodes a rewiring leaves and names them") {
  auto model = small_bert();
  model->eval();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, eval_inputs(), b);
  NoGradGuard ng;
  const Tensor before = g.run(graph_inputs(g, b)).at("logits");
  std::vector<std::string> dead;
  for (graph::Node* n : g.nodes())
    if (is_dropout(g, *n)) {
      g.replace_all_uses_with(n, n->args.at(0));  // its value is now read by nobody
      dead.push_back(n->name);
    }
  REQUIRE(dead.size() == 6);
  DceReport r = dead_code_elimination(g);
  CHECK(r.removed == 6);
  CHECK(r.names == dead);
  CHECK(count_dropout(g).count == 0);
  g.lint();
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"), before));
}

namespace {

// y = drop_b(lin(x)), with drop_a(x) and dropout(x, 0.3) computed and never read: eager still
// draws their masks, so drop_b's mask comes from later in the generator's stream.
struct UnusedDropout : nn::Module {
  nn::ModulePtr lin, drop_a, drop_b;
  UnusedDropout() {
    register_module("lin", lin, nn::ModulePtr(std::make_shared<nn::Linear>(4, 4)));
    register_module("drop_a", drop_a, nn::ModulePtr(std::make_shared<nn::Dropout>(0.5)));
    register_module("drop_b", drop_b, nn::ModulePtr(std::make_shared<nn::Dropout>(0.5)));
  }
  std::string type_name() const override { return "UnusedDropout"; }
  bool is_leaf() const override { return false; }
  Tensor forward(const Tensor& x) override {
    (*drop_a)(x);                        // a call_module node nothing reads
    mase::dropout(x, 0.3, is_training());  // a call_function node nothing reads
    return (*drop_b)((*lin)(x));
  }
};

}  // namespace

// DCE (trace's own and the pass) removed an unread dropout; in training every later dropout
// then drew from an earlier point of the stream than eager, so compiled losses left eager's.
TEST_CASE("dce: an unread dropout in training keeps the later masks eager's") {
  auto m = std::make_shared<UnusedDropout>();
  m->train();
  const Tensor x = random_tensor({6, 4}, 7, -1.0, 1.0, DType::f32);
  Compiled compiled = compile(m, [m](const TensorMap& in) {
    return NamedTensors{{"y", (*m)(in.at("x"))}};
  });
  NoGradGuard ng;
  for (uint64_t seed : {11, 12, 13}) {  // the first call compiles, the others replay
    INFO("seed " << seed);
    manual_seed(seed);
    const Tensor want = (*m)(x);
    const uint64_t want_offset = default_generator().offset;
    manual_seed(seed);
    const Tensor got = compiled({{"x", x}}).at("y");
    CHECK(bitwise_equal(got, want));
    CHECK(default_generator().offset == want_offset);  // the next step starts where eager's does
  }
  // the unread dropouts are still in the plan's graph, the DCE pass ran and kept them
  const CompiledGraph& cg = compiled.last();
  CHECK(count_target(cg.graph, "drop_a") == 1);
  CHECK(count_target(cg.graph, "dropout") == 1);
  CHECK(std::any_of(cg.passes.begin(), cg.passes.end(),
                    [](const PassRun& p) { return p.name == "dce"; }));
  // in eval mode the dropouts are the identity: DCE removes them
  m->eval();
  Graph g = trace_unary(m, x);
  CHECK(count_target(g, "drop_a") == 0);
  CHECK(count_target(g, "dropout") == 0);
}
