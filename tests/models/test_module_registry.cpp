// tests/models/test_module_registry.cpp — leaf modules rebuilt from (type_name, to_json()),
// Linear around given tensors, and the default precision of parameters.
#include "helpers.h"
#include "models/lora.h"
#include "models/module_registry.h"

using namespace mase;
using namespace mase::nn;

TEST_CASE("registry: every built-in leaf rebuilds from its own config") {
  manual_seed(1);
  Linear base(5, 3);
  std::vector<ModulePtr> leaves{std::make_shared<Linear>(4, 3, false),
                                std::make_shared<Embedding>(7, 2),
                                std::make_shared<LayerNorm>(6, 1e-5),
                                std::make_shared<Dropout>(0.25),
                                std::make_shared<GELU>(),
                                std::make_shared<Tanh>(),
                                std::make_shared<ReLU>(),
                                std::make_shared<Identity>(),
                                std::make_shared<LoraLinear>(base, 2, 4.0, 0.1)};
  for (const ModulePtr& m : leaves) {
    INFO(m->type_name());
    CHECK(is_registered_module_type(m->type_name()));
    ModulePtr again = make_module(m->type_name(), m->to_json());
    CHECK(again->type_name() == m->type_name());
    CHECK(again->to_json() == m->to_json());
    CHECK(again->extra_repr() == m->extra_repr());
    auto a = again->named_parameters(), b = m->named_parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].second.shape() == b[i].second.shape());
  }
  CHECK(registered_module_types().size() >= 9);
}

TEST_CASE("registry: rebuilding does not move the default random stream") {
  manual_seed(6);
  make_module("Linear", {{"in_features", 64}, {"out_features", 64}, {"bias", true}});
  CHECK(default_generator().seed == 6);
  CHECK(default_generator().offset == 0);
}

TEST_CASE("registry: unknown types and bad configs are ConfigErrors") {
  CHECK(test::error_message([] {
          make_module("Nope", nlohmann::json::object());
        }).rfind("[make_module] expected a registered module type (", 0) == 0);
  CHECK_THROWS_AS(make_module("Dropout", {{"p", "high"}}), ConfigError);
  CHECK_THROWS_AS(make_module("Dropout", {{"p", 2.0}}), ConfigError);  // the constructor's check
  // LayerNorm checks its arguments as Linear and Embedding do (a negative size was a ShapeError
  // from the allocator, a negative eps only an error at the first forward)
  CHECK(test::error_message([] {
          make_module("LayerNorm", {{"normalized_shape", -2}, {"eps", 1e-12}});
        }) == "[LayerNorm] expected a positive size, got -2");
  CHECK_THROWS_AS(make_module("LayerNorm", {{"normalized_shape", 4}, {"eps", -1.0}}), ConfigError);
  register_module_type("Twice", [](const nlohmann::json& c) -> ModulePtr {
    return std::make_shared<Linear>(c.at("n").get<int64_t>(), c.at("n").get<int64_t>());
  });
  CHECK(make_module("Twice", {{"n", 3}})->named_parameters()[0].second.shape() == Shape{3, 3});
}

TEST_CASE("module: Linear around given tensors and the default precision") {
  Tensor w = Tensor::ones({3, 2}).set_requires_grad(false), b = Tensor::zeros({3});
  b.set_requires_grad(true);
  Linear lin(w, b);
  CHECK(lin.in_features == 2);
  CHECK(lin.out_features == 3);
  CHECK(lin.weight.is_same(w));
  CHECK_FALSE(lin.weight.requires_grad());  // flags kept
  CHECK(lin.bias.requires_grad());
  CHECK(lin.precision("weight") == Precision{"float", {32}});
  CHECK(lin.precision("bias").str() == "float[32]");
  CHECK_THROWS_AS(lin.precision("gamma"), ConfigError);
  CHECK_THROWS_AS(Linear(Tensor::ones({3}), Tensor()), ShapeError);
  CHECK_THROWS_AS(Linear(Tensor::ones({3, 2}), Tensor::ones({2})), ShapeError);
  Linear f64(Tensor::ones({1, 1}, DType::f64), Tensor());
  CHECK(f64.precision("weight").str() == "float[64]");
  CHECK(f64.to_json() == nlohmann::json{{"in_features", 1}, {"out_features", 1}, {"bias", false}});
}
