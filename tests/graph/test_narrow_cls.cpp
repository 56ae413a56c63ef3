// tests/graph/test_narrow_cls.cpp — the narrow_cls pass (graph/passes/narrow_cls.h): a compiled
// eval graph computes the last layer's query side on the [CLS] token only (its sdpa really
// runs one query row), the logits equal eager's within fp32 reassociation, fused or not, with a
// padded sequence; mean pooling and training are left alone.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/narrow_cls.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

// The output shape of every node called `target` when `g` runs on `b`.
std::vector<Shape> shapes_of(const Graph& g, const data::Batch& b, const std::string& target) {
  std::vector<Shape> out;
  TensorMap in{{"input_ids", b.input_ids}, {"attention_mask", b.attention_mask}};
  NoGradGuard ng;
  g.run(in, [&](const graph::Node& n, const Tensors&, const Tensor& v) {
    if (n.target == target) out.push_back(v.shape());
  });
  return out;
}

}  // namespace

TEST_CASE("narrow_cls: the last layer runs one query row, the logits stay eager's") {
  auto model = small_bert();  // C 24, 3 heads of 8, 2 layers, CLS pooling
  model->eval();
  const data::Batch b = small_batch(7);  // 3 × 7 tokens, the second sequence padded
  Compiled compiled = compile_bert(model);
  Tensor y;
  {
    NoGradGuard ng;
    y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  }
  const CompiledGraph& cg = compiled.last();
  // query, view, transpose, sdpa, transpose, reshape, attention output dense, its Add & Norm,
  // intermediate dense, bias_gelu, output dense, its Add & Norm: 12 nodes of the last layer
  CHECK(cg.narrowed_nodes == 12);
  CHECK(count_target(cg.graph, "slice") == 1);  // of the layer's input, for q and the residual
  const auto pass = std::find_if(cg.passes.begin(), cg.passes.end(),
                                 [](const PassRun& p) { return p.name == "narrow_cls"; });
  REQUIRE(pass != cg.passes.end());
  CHECK(pass->report.find("compute 1 of 7 tokens") != std::string::npos);
  // the first layer attends with every token, the last with the [CLS] row only
  const std::vector<Shape> attn = shapes_of(cg.graph, b, "sdpa");
  REQUIRE(attn.size() == 2);
  CHECK(attn[0] == Shape{3, 3, 7, 8});
  CHECK(attn[1] == Shape{3, 3, 1, 8});
  nn::fuse_kernels(*model);
  NoGradGuard ng;
  const Tensor want = eager_outputs(*model, b, false).at("logits");
  double scale = 0;  // the largest logit
  for (double v : want.to_vector<double>()) scale = std::max(scale, std::abs(v));
  CHECK(scale > 1e-3);
  CHECK(max_abs_diff(y, want) <= 1e-5 * scale);
}

TEST_CASE("narrow_cls: the unfused graph narrows through modules, add and LayerNorm") {
  auto model = small_bert(3);
  model->eval();
  const data::Batch b = small_batch(9, 8);
  Compiled compiled = compile_bert(model, {{"fuse_bias_gelu", "fuse_add_norm"}});
  NoGradGuard ng;
  const Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  // the same 12 steps as call_module Linear / GELU / LayerNorm and two adds
  CHECK(compiled.last().narrowed_nodes == 14);
  CHECK(shapes_of(compiled.last().graph, b, "sdpa").back() == Shape{3, 3, 1, 8});
  nn::unfuse_kernels(*model);
  const Tensor want = eager_outputs(*model, b, false).at("logits");
  CHECK(max_abs_diff(y, want) <= 1e-5);
}

TEST_CASE("narrow_cls: a training step on one token draws eager's dropout masks") {
  auto model = small_bert(6);  // dropout 0.1 in the hidden layers and the attention
  model->train();
  const data::Batch b = small_batch(9, 3);
  Compiled compiled = compile_bert(model);
  auto got = loss_and_grads(*model,
                            [&] { return compiled(bert_inputs(train_inputs(), b)).at("loss"); });
  const CompiledGraph& cg = compiled.last();
  CHECK(cg.narrowed_nodes == 12);
  // the last layer's Add & Norms and attention draw rows b·T + 0 of eager's streams
  int64_t mapped = 0;
  for (const graph::Node* n : cg.graph.nodes()) mapped += find_attr(n->attrs, "rows_stride") != nullptr;
  CHECK(mapped == 3);
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  // other masks would move the loss by ~1e-2 (checked: the test fails with rows_first 1)
  CHECK(max_abs_diff(got.at("loss"), want.at("loss")) <= 1e-6);
  for (const auto& [name, g] : want) {
    INFO(name);
    if (!g.defined()) continue;
    double scale = 0;
    for (double v : g.to_vector<double>()) scale = std::max(scale, std::abs(v));
    CHECK(max_abs_diff(got.at(name), g) <= 1e-5 * scale + 1e-9);
  }
}

TEST_CASE("narrow_cls: mean pooling reads every token, and nothing draws out of order") {
  nn::BertConfig c = small_bert_config();
  c.pooling = "mean";
  auto model = small_bert(4, c);
  model->eval();
  Compiled compiled = compile_bert(model);
  {
    NoGradGuard ng;
    compiled(bert_inputs(eval_inputs(), small_batch()));
  }
  CHECK(compiled.last().narrowed_nodes == 0);
  CHECK(count_target(compiled.last().graph, "slice") == 0);
  // and the report says why nothing happened on a graph without a select of one token
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  const NarrowReport r = narrow_cls(g);
  CHECK(r.narrowed == 0);
  CHECK(r.str().find("reads no single token") != std::string::npos);
}
