// tests/graph/test_memory_plan.cpp — memory planning (graph/passes/memory_plan.h): on a small
// BERT in eval and training mode, no two buffers alive at the same step overlap in the arena
// (every pair checked), the arena is at least the live peak and at most the sum, views own
// no buffer, and a hand-checked chain reuses memory.
#include "compile_helpers.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/fuse_bias_gelu.h"
#include "graph/passes/memory_plan.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

MemoryPlan plan_of(Graph& g, const TensorMap& in) {
  RecordedValues values;
  g.run(in, record_values(values));
  return plan_memory(g, values);
}

void check_plan(const MemoryPlan& p) {
  REQUIRE(!p.buffers.empty());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlannedBuffer& a = p.buffers[i];
    CHECK(a.first <= a.last);
    CHECK(a.offset % 64 == 0);
    CHECK(a.offset + a.bytes <= p.arena_bytes);
    for (size_t j = i + 1; j < p.buffers.size(); ++j) {
      const PlannedBuffer& b = p.buffers[j];
      const bool share_space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (overlap_in_time(a, b) && share_space) FAIL(a.node->name, " overlaps ", b.node->name);
    }
  }
  CHECK(p.live_peak_bytes <= p.arena_bytes);
  CHECK(p.arena_bytes <= p.total_bytes);
}

}  // namespace

TEST_CASE("memory_plan: buffers alive together never overlap and peak <= sum (eval, fused)") {
  auto model = small_bert();
  model->eval();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, eval_inputs(), b);
  fuse_bias_gelu(g);
  fuse_add_norm(g);
  NoGradGuard ng;
  MemoryPlan p = plan_of(g, graph_inputs(g, b));
  check_plan(p);
  CHECK(p.arena_bytes < p.total_bytes);  // something is reused
  size_t computed = 0;
  for (const graph::Node* n : g.nodes())
    computed += n->op == OpKind::call_function || n->op == OpKind::call_method ||
                n->op == OpKind::call_module;
  CHECK(p.buffers.size() < computed);  // views and eval dropouts own no buffer
  for (const PlannedBuffer& buf : p.buffers) CHECK(buf.node->target != "transpose");
}

TEST_CASE("memory_plan: the same holds in training mode (unfused graph)") {
  auto model = small_bert();
  model->train();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, train_inputs(), b);
  check_plan(plan_of(g, graph_inputs(g, b)));
}

TEST_CASE("memory_plan: a chain of four ops needs two buffers") {
  // y = neg(neg(neg(neg(x)))) over 16 floats (64 bytes each): each value dies when the next is
  // made, so two slots alternate: arena 128 bytes, sum 256, the output lives to the end.
  struct Chain : nn::Module {
    std::string type_name() const override { return "Chain"; }
    bool is_leaf() const override { return false; }
    Tensor forward(const Tensor& x) override { return neg(neg(neg(neg(x)))); }
  };
  auto m = std::make_shared<Chain>();
  Graph g = trace_unary(m, Tensor::ones({16}));
  MemoryPlan p = plan_of(g, {{"x", Tensor::ones({16})}});
  check_plan(p);
  REQUIRE(p.buffers.size() == 4);
  CHECK(p.total_bytes == 256);
  CHECK(p.live_peak_bytes == 128);
  CHECK(p.arena_bytes == 128);
  CHECK(p.buffers.back().last == static_cast<int64_t>(g.size()) - 1);  // read by the output
}
