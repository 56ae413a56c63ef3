// tests/graph/test_dce.cpp — dead-code elimination as a pass (graph/passes/dce.h): nothing to
// do on a fresh trace; a dropout whose users were rewired (but not erased) is removed and
// named, and the outputs do not change in eval mode.
#include "compile_helpers.h"
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
