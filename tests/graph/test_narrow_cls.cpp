// tests/graph/test_narrow_cls.cpp — the narrow_cls pass (graph/passes/narrow_cls.h): a compiled
// eval graph computes the last layer's query side on the [CLS] token only (its sdpa really
// runs one query row), the logits equal eager's within fp32 reassociation, fused or not, with a
// padded sequence; mean pooling and training are left alone.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/fuse_bias_gelu.h"
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
  // linear_gelu (intermediate dense + GELU), output dense, its Add & Norm: 11 nodes of the
  // last layer
  CHECK(cg.narrowed_nodes == 11);
  CHECK(count_target(cg.graph, "linear_gelu") == 2);  // the narrowed one included
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

namespace {

// A compiled training step of small_bert on `dev` against eager's on the same device: the
// narrowed last layer draws rows b·T + 0 of eager's dropout streams, so loss and gradients
// agree within fp32 reassociation (tol: relative to each gradient's largest entry).
void check_narrowed_training(Device dev, double loss_tol, double grad_tol,
                             const nn::BertConfig& c = small_bert_config()) {
  auto model = small_bert(6, c);  // dropout 0.1 in the hidden layers and the attention
  model->train();
  model->to(dev);
  const data::Batch b = data::to_device(small_batch(9, 3), dev);
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
  CHECK(max_abs_diff(got.at("loss"), want.at("loss")) <= loss_tol);
  for (const auto& [name, g] : want) {
    INFO(name);
    if (!g.defined()) continue;
    double scale = 0;
    for (double v : g.to_vector<double>()) scale = std::max(scale, std::abs(v));
    CHECK(max_abs_diff(got.at(name), g) <= grad_tol * scale + 1e-9);
  }
}

}  // namespace

TEST_CASE("narrow_cls: a training step on one token draws eager's dropout masks") {
  check_narrowed_training(Device::cpu(), 1e-6, 1e-5);
}

// The same on a GPU: cuda/layer_norm.cu and cuda/sdpa_tile.cuh take the row map (written
// 2026-11-28 on a machine without a GPU; this case is what checks them where one is).
TEST_CASE("narrow_cls: a training step on a GPU draws eager's dropout masks there too") {
  if (!have_gpu()) return;
  nn::BertConfig c = small_bert_config();
  c.hidden_size = 64;  // 2 heads of 32: a head size the fused CUDA attention has
  c.num_attention_heads = 2;
  check_narrowed_training(Device::cuda(0), 1e-5, 1e-4, c);
}

// Without that head size the GPU's attention is the reference composition, which draws whole
// tensors: the pass leaves training alone there and says why (no GPU needed: a pass argument).
TEST_CASE("narrow_cls: on a GPU, training with a head size the CUDA kernel lacks is not narrowed") {
  // the training graph as graph::compile has it when narrow_cls runs: fused Add & Norms
  auto fused_training_graph = [](const nn::BertConfig& c) {
    auto model = small_bert(6, c);
    model->train();
    Graph g = trace_bert(model, train_inputs(), small_batch(9, 3));
    fuse_bias_gelu(g);
    fuse_add_norm(g);
    return g;
  };
  Graph g = fused_training_graph(small_bert_config());  // heads of 8
  const NarrowReport r = narrow_cls(g, /*training=*/true, /*cuda=*/true);
  CHECK(r.narrowed == 0);
  CHECK(r.str().find("no head size 8") != std::string::npos);
  Graph cpu = fused_training_graph(small_bert_config());
  CHECK(narrow_cls(cpu, true, false).narrowed == 12);
  nn::BertConfig c = small_bert_config();
  c.hidden_size = 64;  // heads of 32
  c.num_attention_heads = 2;
  Graph g32 = fused_training_graph(c);
  CHECK(narrow_cls(g32, true, true).narrowed == 12);
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
