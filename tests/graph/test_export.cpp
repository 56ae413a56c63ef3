// tests/graph/test_export.cpp — export -> reload gives the same nodes, metadata and outputs
// (bit for bit), for plain, frozen, LoRA and hand-built graphs; bad folders are clear errors.
#include <filesystem>
#include <fstream>

#include "../models/temp_dir.h"
#include "graph/export.h"
#include "graph/metadata.h"
#include "graph/passes/dropout.h"
#include "graph_helpers.h"
#include "models/lora.h"
#include "models/module_registry.h"
#include "models/parameters.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"

namespace mase::graph {

namespace {

// Same structure, names, attrs, metadata; returns the reloaded graph's outputs on `in`.
void check_same_graph(const Graph& a, const Graph& b) {
  auto na = a.nodes(), nb = b.nodes();
  REQUIRE(na.size() == nb.size());
  for (size_t i = 0; i < na.size(); ++i) {
    INFO(na[i]->name);
    CHECK(na[i]->name == nb[i]->name);
    CHECK(na[i]->op == nb[i]->op);
    CHECK(na[i]->target == nb[i]->target);
    CHECK(na[i]->attrs == nb[i]->attrs);
    CHECK(na[i]->meta == nb[i]->meta);
    REQUIRE(na[i]->args.size() == nb[i]->args.size());
    for (size_t k = 0; k < na[i]->args.size(); ++k)
      CHECK((na[i]->args[k] ? na[i]->args[k]->name : "-") ==
            (nb[i]->args[k] ? nb[i]->args[k]->name : "-"));
  }
  CHECK(a.output_names() == b.output_names());
}

}  // namespace

TEST_CASE("export: reload runs to the same outputs with the same metadata") {
  test::TempDir dir;
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  remove_dropout(g);  // an edited graph exports like any other
  freeze(*model, "bert.embeddings");
  add_common_metadata(g, graph_inputs(g, b));
  export_graph(g, dir.path.string());
  CHECK(std::filesystem::exists(dir.file("graph.json")));
  CHECK(std::filesystem::exists(dir.file("model.safetensors")));

  Graph r = load_graph(dir.path.string());
  check_same_graph(g, r);
  CHECK_FALSE(r.root().is_training());
  TensorMap want = g.run(graph_inputs(g, b)), got = r.run(graph_inputs(r, b));
  CHECK(test::bitwise_equal(got.at("logits"), want.at("logits")));
  CHECK(test::bitwise_equal(got.at("loss"), want.at("loss")));
  // the modules are rebuilt at their paths, trainable flags kept
  CHECK(r.root().submodule("bert.encoder.layer.1.output.dense")->type_name() == "Linear");
  auto emb = r.root().submodule("bert.embeddings.word_embeddings")->named_parameters();
  CHECK_FALSE(emb.at(0).second.requires_grad());
  CHECK(r.root().submodule("classifier")->named_parameters().at(0).second.requires_grad());
  // the reloaded graph annotates to the same metadata and exports again
  add_common_metadata(r, graph_inputs(r, b));
  check_same_graph(g, r);
  test::TempDir again;
  export_graph(r, again.path.string());
  check_same_graph(g, load_graph(again.path.string()));
}

TEST_CASE("export: LoRA modules, parameters outside leaves and constants reload") {
  test::TempDir dir;
  auto model = test::tiny_bert(1, 2000);
  insert_lora(*model, {.rank = 2, .alpha = 4, .dropout = 0.1});
  {
    NoGradGuard ng;  // adapters that matter
    for (auto& [path, p] : model->named_parameters())
      if (path.ends_with("lora_B")) fill_(p, 0.25);
  }
  model->eval();
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph g = trace_bert(model, {"input_ids", "attention_mask"}, b);
  export_graph(g, dir.path.string());
  Graph r = load_graph(dir.path.string());
  CHECK(r.root().submodule("bert.encoder.layer.0.attention.self.key")->type_name() == "LoraLinear");
  auto* lora =
      dynamic_cast<nn::LoraLinear*>(r.root().submodule("bert.encoder.layer.0.output.dense").get());
  REQUIRE(lora != nullptr);
  CHECK(lora->rank == 2);
  CHECK(lora->alpha == 4);
  CHECK(lora->dropout == 0.1);
  CHECK(test::bitwise_equal(r.run(graph_inputs(r, b)).at("logits"),
                            g.run(graph_inputs(g, b)).at("logits")));

  // a hand-made model with a get_attr parameter and a constant
  auto m = std::make_shared<test::Scaled>();
  Tensor x = test::random_tensor({2, 4}, 7, -1, 1, DType::f32);
  Graph s = test::trace_unary(m, x);
  test::TempDir dir2;
  export_graph(s, dir2.path.string());
  Graph sr = load_graph(dir2.path.string());
  CHECK(sr.constants().count("_tensor_constant0") == 1);
  CHECK(test::bitwise_equal(sr.run({{"x", x}}).at("y"), (*m)(x)));
  CHECK(sr.get_attr_value(sr.at("gain")).requires_grad());
}

TEST_CASE("export: quantized, pruned and MXINT8 layers reload with their formats and masks") {
  // int8 on the attention projections, minifloat on the rest; 50% of the weights pruned by
  // magnitude across the model, 30% of each Linear's inputs by magnitude on every forward
  const nlohmann::json cfg = nlohmann::json::parse(R"({
    "quantize": {"by": "regex",
      "attention\\.self": {"config": {"name": "integer", "data_in_width": 8,
          "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 6,
          "bias_width": 8, "bias_frac_width": 4}},
      "default": {"config": {"name": "minifloat_ieee", "data_in_width": 8,
          "data_in_exponent_width": 4, "weight_width": 8, "weight_exponent_width": 4,
          "bias_width": 8, "bias_exponent_width": 4}}},
    "prune": {"weight": {"sparsity": 0.5, "method": "l1-norm", "scope": "global"},
              "activation": {"sparsity": 0.3, "method": "l1-norm"}}})");
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  (void)quant::compress(*model, cfg);
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  test::TempDir dir;
  export_graph(g, dir.path.string());
  Graph r = load_graph(dir.path.string());
  check_same_graph(g, r);  // metadata included: the precisions below survive the round trip
  TensorMap want = g.run(graph_inputs(g, b)), got = r.run(graph_inputs(r, b));
  CHECK(test::bitwise_equal(got.at("logits"), want.at("logits")));
  auto q = r.root().submodule("bert.encoder.layer.0.attention.self.query");
  REQUIRE(q->type_name() == "QuantizedLinear");
  CHECK(q->precision("weight") == nn::Precision{"integer", {8, 6}});
  CHECK(r.root().submodule("classifier")->precision("weight") ==
        nn::Precision{"minifloat_ieee", {8, 4}});
  // the weight masks came back with the weights: the same zeros
  auto* ql = dynamic_cast<quant::QuantizedLinear*>(q.get());
  auto* qg = dynamic_cast<quant::QuantizedLinear*>(
      g.root().submodule("bert.encoder.layer.0.attention.self.query").get());
  REQUIRE((ql != nullptr && qg != nullptr));
  CHECK(ql->pruned_weights() == qg->pruned_weights());
  CHECK(ql->pruned_weights() > 0);
  CHECK(test::bitwise_equal(ql->weight, qg->weight));

  // MXINT8: the packed weights (int8 elements, E8M0 scales) are the module's tensors
  auto mx = test::tiny_bert(1, 2000);
  mx->eval();
  (void)quant::mxint8_weights(*mx);
  Graph gm = trace_bert(mx, {"input_ids"}, b);
  test::TempDir dir2;
  export_graph(gm, dir2.path.string());
  Graph rm = load_graph(dir2.path.string());
  CHECK(rm.root().submodule("classifier")->type_name() == "MxInt8Linear");
  CHECK(test::bitwise_equal(rm.run(graph_inputs(rm, b)).at("logits"),
                            gm.run(graph_inputs(gm, b)).at("logits")));
}

TEST_CASE("export: attrs keep their types and exact values") {
  test::TempDir dir;
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  Graph g = trace_bert(model, {"input_ids"}, test::tiny_batch(3, 2000));
  export_graph(g, dir.path.string());
  Graph r = load_graph(dir.path.string());
  // (1 − m)·lowest: the f32 lowest value survives the text round trip exactly
  CHECK(std::get<double>(r.at("mul_scalar").attr("scalar")) ==
        double(std::numeric_limits<float>::lowest()));
  CHECK(std::get<std::vector<int64_t>>(r.at("view_1").attr("shape")) ==
        std::vector<int64_t>{2, 16, 2, 64});
  CHECK(std::get<bool>(r.at("sdpa").attr("training")) == false);
  CHECK(std::get<std::string>(r.at("ones_like").attr("dtype")) == "i32");
}

TEST_CASE("export: bad folders and unknown modules are clear errors") {
  test::TempDir dir;
  CHECK_THROWS_AS(load_graph(dir.file("missing")), IoError);
  {
    std::ofstream f(dir.file("graph.json"));
    f << "{ not json";
  }
  CHECK_THROWS_AS(load_graph(dir.path.string()), IoError);
  {
    std::ofstream f(dir.file("graph.json"));
    f << R"({"format": "mase-graph", "version": 1, "training": false, "outputs": [], "nodes": [],)"
      << R"( "modules": {"m": {"type": "Mystery", "config": {}}}, "tensors": {}})";
  }
  CHECK(test::error_message([&] {
          load_graph(dir.path.string());
        }).rfind("[make_module] expected a registered module type (", 0) == 0);
  CHECK(nn::is_registered_module_type("LoraLinear"));
  CHECK_THROWS_AS(nn::make_module("Linear", {{"in_features", 3}}), ConfigError);  // missing keys
  // a module with no config cannot be exported
  struct Opaque : nn::Module {
    std::string type_name() const override { return "Opaque"; }
    Tensor forward(const Tensor& x) override { return x * 2.0; }
  };
  auto m = std::make_shared<Opaque>();
  Tensor x = Tensor::ones({2});
  Graph g = test::trace_unary(m, x);
  CHECK_THROWS_AS(export_graph(g, dir.file("opaque")), GraphError);
}

}  // namespace mase::graph
