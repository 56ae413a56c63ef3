// tests/graph/test_metadata.cpp — the common metadata pass against an eager run: the shapes a
// module observer sees in the eager model, and shapes worked out by hand from bert-tiny's
// sizes (B = 2, T = 16, C = 128, NH = 2, HS = 64, I = 512).
#include <map>

#include "graph/metadata.h"
#include "graph_helpers.h"

namespace mase::graph {
namespace {

// Records (input shape, output shape) of every leaf module call of an eager forward, by path.
struct ShapeSpy : nn::ModuleObserver {
  std::map<const nn::Module*, std::string> paths;
  std::map<std::string, std::pair<Shape, Shape>> seen;
  Tensor on_call(nn::Module& m, const Tensor& x, const std::function<Tensor()>& run) override {
    Tensor y = run();
    if (m.is_leaf()) seen[paths.at(&m)] = {x.shape(), y.shape()};
    return y;
  }
};

}  // namespace

TEST_CASE("metadata: call_module shapes equal those of the eager run") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  ShapeSpy spy;
  for (const auto& [path, m] : model->named_modules()) spy.paths[m.get()] = path;
  nn::ModuleObserver* prev = nn::set_module_observer(&spy);
  model->forward(b.input_ids, b.attention_mask, Tensor(), b.labels);
  nn::set_module_observer(prev);

  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  int modules = 0;
  for (const Node* n : g.nodes()) {
    if (n->op != OpKind::call_module) continue;
    INFO(n->name);
    ++modules;
    REQUIRE(spy.seen.count(n->target));
    REQUIRE(n->meta.args.size() == 1);
    REQUIRE(n->meta.results.size() == 1);
    CHECK(n->meta.args[0].shape == spy.seen[n->target].first);
    CHECK(n->meta.results[0].shape == spy.seen[n->target].second);
  }
  CHECK(modules == static_cast<int>(spy.seen.size()));
  CHECK(modules == 31);
}

TEST_CASE("metadata: types, ops, shapes and parameters of bert-tiny nodes") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  const Node& q = g.at("bert_encoder_layer_0_attention_self_query");
  CHECK(q.meta.mase_type == "module_related_func");
  CHECK(q.meta.mase_op == "linear");
  CHECK(q.meta.module_type == "Linear");
  CHECK(q.meta.args[0] == TensorMeta{true, {2, 16, 128}, DType::f32});
  REQUIRE(q.meta.parameters.size() == 2);
  CHECK(q.meta.parameters[0] == ParamMeta{"weight", {128, 128}, DType::f32, {"float", {32}}, true});
  CHECK(q.meta.parameters[1] == ParamMeta{"bias", {128}, DType::f32, {"float", {32}}, true});
  const Node& ffn = g.at("bert_encoder_layer_1_intermediate_dense");
  CHECK(ffn.meta.results[0].shape == Shape{2, 16, 512});
  CHECK(ffn.meta.parameters[0].shape == Shape{512, 128});
  const Node& sdpa = g.at("sdpa");
  CHECK(sdpa.meta.mase_type == "module_related_func");
  CHECK(sdpa.meta.mase_op == "scaled_dot_product_attention");
  REQUIRE(sdpa.meta.args.size() == 4);
  CHECK(sdpa.meta.args[0].shape == Shape{2, 2, 16, 64});  // q (B, NH, T, HS)
  CHECK(sdpa.meta.args[3].shape == Shape{2, 1, 1, 16});   // the additive mask (B, 1, 1, T)
  CHECK(sdpa.meta.results[0].shape == Shape{2, 2, 16, 64});
  CHECK(g.at("view").meta.mase_type == "implicit_func");
  CHECK(g.at("view").meta.results[0].shape == Shape{2, 1, 1, 16});
  CHECK(g.at("add").meta.mase_type == "builtin_func");
  CHECK(g.at("add").meta.mase_op == "add");
  CHECK(g.at("rsub_scalar").meta.mase_op == "sub");
  CHECK(g.at("select").meta.mase_op == "getitem");
  CHECK(g.at("select").meta.results[0].shape == Shape{2, 128});
  CHECK(g.at("to_dtype").meta.args[0] == TensorMeta{true, {2, 16}, DType::i32});
  CHECK(g.at("to_dtype").meta.results[0].dtype == DType::f32);
  const Node& ce = g.at("cross_entropy");
  CHECK(ce.meta.args[0].shape == Shape{2, 2});
  CHECK(ce.meta.args[1] == TensorMeta{true, {2}, DType::i32});
  CHECK(ce.meta.results[0].shape == Shape{});
  CHECK(g.at("labels").meta.mase_type == "placeholder");
  CHECK(g.output_node()->meta.mase_type == "output");
  CHECK(g.output_node()->meta.args.size() == 2);
  CHECK(g.at("bert_encoder_layer_0_intermediate_intermediate_act_fn").meta.mase_op == "gelu");
  CHECK(g.at("bert_pooler_activation").meta.mase_op == "tanh");
  CHECK(g.at("bert_embeddings_LayerNorm").meta.mase_op == "layer_norm");
  CHECK(g.at("bert_embeddings_word_embeddings").meta.parameters[0].shape == Shape{30522, 128});
}

TEST_CASE("metadata: precision comes from the module and frozen parameters show") {
  // a module reporting fixed-point weights: the extension point quantized wrappers use
  struct FixedLinear : nn::Linear {
    FixedLinear() : nn::Linear(4, 3) {}
    std::string type_name() const override { return "FixedLinear"; }
    nn::Precision precision(const std::string& name) const override {
      return name == "weight" ? nn::Precision{"fixed", {8, 4}} : nn::Linear::precision(name);
    }
  };
  manual_seed(4);
  auto m = std::make_shared<FixedLinear>();
  m->bias.set_requires_grad(false);
  Tensor x = test::random_tensor({2, 4}, 1, -1, 1, DType::f32);
  Graph g = test::trace_unary(m, x);
  // the root itself is the leaf: a graph of one call_module node, target "" (the root)
  add_common_metadata(g, {{"x", x}});
  const Node* call = g.output_node()->args.at(0);
  REQUIRE(call->op == OpKind::call_module);
  CHECK(call->meta.mase_type == "module");
  CHECK(call->meta.mase_op == "fixed_linear");
  CHECK(call->meta.parameters[0].precision == nn::Precision{"fixed", {8, 4}});
  CHECK(call->meta.parameters[0].precision.str() == "fixed[8, 4]");
  CHECK(call->meta.parameters[1].precision.str() == "float[32]");
  CHECK(call->meta.parameters[1].trainable == false);
}

TEST_CASE("metadata: get_attr nodes say parameter, buffer or constant") {
  struct Shifted : nn::Module {  // y = x * scale + shift + 1 (scale a parameter, shift a buffer)
    Tensor scale, shift, one = Tensor::ones({2});
    Shifted() {
      register_parameter("scale", scale, Tensor::full({2}, 3.0));
      register_buffer("shift", shift, Tensor::full({2}, 0.5, DType::f64));
    }
    std::string type_name() const override { return "Shifted"; }
    bool is_leaf() const override { return false; }
    Tensor forward(const Tensor& x) override {
      return x * scale + to_dtype(shift, DType::f32) + one;
    }
  };
  auto m = std::make_shared<Shifted>();
  Tensor x = Tensor::ones({2});
  Graph g = test::trace_unary(m, x);
  add_common_metadata(g, {{"x", x}});
  CHECK(g.at("scale").meta.mase_op == "parameter");
  CHECK(g.at("scale").meta.parameters.at(0) ==
        ParamMeta{"scale", {2}, DType::f32, {"float", {32}}, true});
  CHECK(g.at("shift").meta.mase_op == "buffer");
  CHECK(g.at("shift").meta.parameters.at(0).precision.str() == "float[64]");
  CHECK(g.at("_tensor_constant0").meta.mase_op == "constant");
  CHECK(g.output_node()->meta.args.at(0) == TensorMeta{true, {2}, DType::f32});
}

TEST_CASE("metadata: annotating leaves the random stream where it was") {
  auto model = test::tiny_bert(1, 2000);
  model->train();  // dropout draws masks during the metadata run
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph g = trace_bert(model, {"input_ids"}, b);
  manual_seed(5);
  add_common_metadata(g, graph_inputs(g, b));
  CHECK(default_generator().offset == 0);
}

TEST_CASE("metadata: JSON round trip") {
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph g = trace_bert(model, {"input_ids", "labels"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  for (const Node* n : g.nodes()) CHECK(node_meta_from_json(to_json(n->meta)) == n->meta);
  CHECK_THROWS_AS(node_meta_from_json(nlohmann::json{{"mase_type", "x"}}), GraphError);
}

}  // namespace mase::graph
