// tests/graph/test_fusion_passes.cpp — the graph fusion passes (graph/passes/fuse_bias_gelu.h,
// fuse_linear_gelu.h, fuse_add_norm.h) on a small BERT traced UNFUSED: each pass fuses every
// plain block, the fused graph's outputs equal the eager model fused the same way
// (models/fusion.h) bit for bit, in eval and in training (loss and every gradient, dropout
// on), and a block whose Linear is not a plain Linear with a bias is left alone.
#include "compile_helpers.h"
#include "graph/compile_report.h"
#include "graph/passes/dropout.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/fuse_bias_gelu.h"
#include "graph/passes/fuse_linear_gelu.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

int64_t computing_nodes(const Graph& g) {
  int64_t n = 0;
  for (const graph::Node* node : g.nodes())
    n += node->op != OpKind::get_attr && node->op != OpKind::placeholder;
  return n;
}

// Traced unfused in eval mode, `pass` applied; compares with the eager model fused the same way.
template <class Pass>
void check_eval(Pass&& pass, bool ffn, bool add_norm, int64_t expected) {
  auto model = small_bert();
  model->eval();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, eval_inputs(), b);
  const int64_t before = computing_nodes(g);
  FuseReport r = pass(g);
  CHECK(r.fused == expected);
  CHECK(computing_nodes(g) <= before);  // 2 ops -> 2 (FFN), 4 -> 2 (Add & Norm)
  g.lint();
  fuse_only(*model, ffn, add_norm);
  NoGradGuard ng;
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"),
                      eager_outputs(*model, b, false).at("logits")));
}

// compile_report on bert-tiny at 2 × 16 tokens (vocab 1,000), one timed step per variant
graph::CompileReportOptions tiny_report() {
  graph::CompileReportOptions o;
  o.model = "bert-tiny";
  o.batch = 2;
  o.seq = 16;
  o.vocab_size = 1000;
  o.repeat = 1;
  return o;
}

}  // namespace

TEST_CASE("fuse_bias_gelu: fuses each FFN and equals the eager fused model bitwise") {
  check_eval([](Graph& g) { return fuse_bias_gelu(g); }, true, false, 2);
  auto model = small_bert();
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  fuse_bias_gelu(g);
  CHECK(count_target(g, "bias_gelu") == 2);
  CHECK(count_target(g, "bert.encoder.layer.0.intermediate.intermediate_act_fn") == 0);
  CHECK(count_target(g, "bert.encoder.layer.0.intermediate.dense.bias") == 1);  // a get_attr
}

TEST_CASE("fuse_linear_gelu: linear + bias_gelu become one node, the eager fused model's bits") {
  auto model = small_bert();
  model->eval();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, eval_inputs(), b);
  CHECK(fuse_linear_gelu(g).fused == 0);  // on the traced graph: Linear and GELU modules
  CHECK(count_target(g, "bert.encoder.layer.0.intermediate.dense") == 1);  // the module call
  REQUIRE(fuse_bias_gelu(g).fused == 2);
  const int64_t before = computing_nodes(g);
  const FuseReport r = fuse_linear_gelu(g);
  CHECK(r.fused == 2);
  CHECK(r.str().starts_with("fuse_linear_gelu: fused 2 patterns (linear + bias_gelu -> "));
  CHECK(computing_nodes(g) == before - 2);  // 2 ops -> 1, per FFN
  CHECK(count_target(g, "linear_gelu") == 2);
  CHECK(count_target(g, "bias_gelu") == 0);
  g.lint();
  // x, W and b in that order, W and b the intermediate dense's parameters
  for (const graph::Node* n : g.nodes())
    if (n->target == "linear_gelu") {
      REQUIRE(n->args.size() == 3);
      CHECK(n->args[1]->target.ends_with("intermediate.dense.weight"));
      CHECK(n->args[2]->target.ends_with("intermediate.dense.bias"));
    }
  CHECK(fuse_linear_gelu(g).fused == 0);  // nothing left
  fuse_only(*model, true, false);
  NoGradGuard ng;
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"),
                      eager_outputs(*model, b, false).at("logits")));
}

TEST_CASE("fuse_linear_gelu: a linear whose output something else reads stays as it is") {
  auto model = small_bert();
  model->eval();
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  REQUIRE(fuse_bias_gelu(g).fused == 2);
  // a second reader of layer 0's linear (its pre-activation): the pattern must not swallow it
  graph::Node* lin = nullptr;
  for (graph::Node* n : g.nodes())
    if (!lin && n->target == "linear" && n->users.size() == 1 && n->users[0]->target == "bias_gelu")
      lin = n;
  REQUIRE(lin != nullptr);
  std::vector<std::pair<std::string, graph::Node*>> outs;
  for (size_t k = 0; k < g.output_names().size(); ++k)
    outs.push_back({g.output_names()[k], g.output_node()->args[k]});
  g.erase(g.output_node());
  outs.push_back({"gelu0", g.add_node(OpKind::call_function, "gelu", {lin}, {}, "second_reader")});
  g.set_output(outs);
  CHECK(fuse_linear_gelu(g).fused == 1);  // layer 1's only
  CHECK(count_target(g, "bias_gelu") == 1);
  g.lint();
  const data::Batch b = small_batch();
  fuse_only(*model, true, false);
  NoGradGuard ng;
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"),
                      eager_outputs(*model, b, false).at("logits")));
}

TEST_CASE("fuse_add_norm: fuses each Add and Norm and equals the eager fused model bitwise") {
  check_eval([](Graph& g) { return fuse_add_norm(g); }, false, true, 4);
}

TEST_CASE("fuse_add_norm: after remove_dropout (no dropout node) it still fuses") {
  check_eval(
      [](Graph& g) {
        remove_dropout(g);
        return fuse_add_norm(g);
      },
      false, true, 4);
}

TEST_CASE("fusion passes: both together in training mode give eager's loss and gradients") {
  auto model = small_bert();
  model->train();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, train_inputs(), b);
  CHECK(fuse_bias_gelu(g).fused == 2);
  CHECK(fuse_add_norm(g).fused == 4);
  CHECK(count_target(g, "dropout_add_layer_norm") == 4);
  const TensorMap in = graph_inputs(g, b);
  auto compiled = loss_and_grads(*model, [&] { return g.run(in).at("loss"); });
  nn::fuse_kernels(*model);
  auto eager = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(compiled, eager);
}

TEST_CASE("fusion passes: a Linear without a bias is not fused") {
  auto model = small_bert();
  model->eval();
  for (const char* path : {"bert.encoder.layer.0.intermediate.dense",
                           "bert.encoder.layer.1.output.dense"}) {
    auto& lin = static_cast<nn::Linear&>(*model->submodule(path));
    model->replace_submodule(path, std::make_shared<nn::Linear>(lin.weight, Tensor()));
  }
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  CHECK(fuse_bias_gelu(g).fused == 1);
  CHECK(fuse_add_norm(g).fused == 3);
  const data::Batch b = small_batch();
  nn::fuse_kernels(*model);  // leaves the same two blocks unfused
  NoGradGuard ng;
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"),
                      eager_outputs(*model, b, false).at("logits")));
}

// compile_report's ablations trace at their first call, which comes right after the eager
// fused step: they must see the unfused model, or "compiled without fuse_bias_gelu" would still
// run eager's fused kernels and the report's "what each pass bought" would read 0 for both
// fusions (it did, until the ablations unfused the model first).
TEST_CASE("compile_report: an ablation without the fusion passes runs no fused kernel") {
  graph::CompileReportOptions o = tiny_report();
  for (bool train : {false, true}) {
    INFO("train " << train);
    o.train = train;
    const graph::CompileReport r = graph::compile_report(o);
    auto fused = [&](const std::string& name) {
      for (const graph::TimedVariant& t : r.times)
        if (t.name == name) return t.fused_nodes;
      FAIL("no variant " << name);
      return int64_t{-2};
    };
    // bert-tiny: 2 layers, each one bias + GELU and two dropout + residual + LayerNorm (in
    // training with every pass on, recompute_gelu turns the bias + GELU nodes into its own)
    CHECK(fused("compiled") == (train ? 4 : 6));
    CHECK(fused("compiled without all passes") == 0);
    CHECK(fused("compiled without fuse_bias_gelu") == 4);
    CHECK(fused("compiled without fuse_add_norm") == 2);
    // eval only: linear_gelu is as much a fused node as the bias_gelu it replaces
    if (!train) CHECK(fused("compiled without fuse_linear_gelu") == 6);
    CHECK(fused("eager fused (nn::fuse_kernels)") == -1);
  }
}

TEST_CASE("compile_report: --precision bf16 for the report, the caller's precision after") {
  graph::CompileReportOptions o = tiny_report();
  o.precision = "bf16";
  const graph::CompileReport r = graph::compile_report(o);
  CHECK(r.str().find(", bf16 GEMMs: ") != std::string::npos);  // the header names the path
  CHECK(r.outputs_equal);  // compiled vs eager fused, both at bf16
  CHECK(cpu_gemm_precision() == GemmPrecision::fp32);
  o.precision = "tf32";  // a GPU mode: refused on the CPU before any work, precision untouched
  CHECK_THROWS_WITH_AS(graph::compile_report(o), doctest::Contains("got 'tf32' on cpu"),
                       ConfigError);
  CHECK(cpu_gemm_precision() == GemmPrecision::fp32);
  Bf16Scope caller;  // a caller's own setting survives a report at another precision
  o.precision = "fp32";
  (void)graph::compile_report(o);
  CHECK(cpu_gemm_precision() == GemmPrecision::bf16);
}
