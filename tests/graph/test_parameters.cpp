// tests/graph/test_parameters.cpp — report_trainable_parameters and freeze against counts
// worked out by hand from bert-tiny's shapes (V = 30522, P = 512, C = 128, I = 512, 2 types):
//   embeddings  V·C + P·C + 2·C + 2·C (LayerNorm)          = 3,906,816 + 65,536 + 256 + 256
//                                                          = 3,972,864
//   one layer   4·(C·C + C) + (C·I + I) + (I·C + C) + 4·C   = 66,048 + 66,048 + 65,664 + 512
//                                                          = 198,272
//   pooler      C·C + C = 16,512        classifier  C·2 + 2 = 258
//   total       3,972,864 + 2·198,272 + 16,512 + 258       = 4,386,178
#include "graph_helpers.h"
#include "models/parameters.h"

namespace mase::graph {

namespace {

const ParameterRow& row(const ParameterReport& r, const std::string& path) {
  for (const auto& x : r.rows)
    if (x.path == path) return x;
  throw Error("no row " + path);
}

}  // namespace

TEST_CASE("parameters: bert-tiny totals and rows count each parameter once") {
  auto model = test::tiny_bert();
  ParameterReport r = report_trainable_parameters(*model);
  CHECK(r.total == 4386178);
  CHECK(r.trainable == 4386178);
  CHECK(row(r, "").total == 4386178);  // the model's row is the total, not a sum of rows
  CHECK(row(r, "bert.embeddings").trainable == 3972864);
  CHECK(row(r, "bert.encoder.layer.0").trainable == 198272);
  CHECK(row(r, "bert.encoder").trainable == 2 * 198272);
  CHECK(row(r, "bert.pooler").trainable == 16512);
  CHECK(row(r, "classifier").trainable == 258);
  CHECK(row(r, "bert.encoder.layer.0.attention.self.query").type == "Linear");
  CHECK(r.rows.size() == model->named_modules().size());
  CHECK(with_commas(4386178) == "4,386,178");
  CHECK(with_commas(258) == "258");
  CHECK(r.str().find("trainable parameters: 4,386,178 of 4,386,178") != std::string::npos);
}

TEST_CASE("parameters: freezing the embeddings leaves 413,314 trainable") {
  auto model = test::tiny_bert();
  FreezeReport f = freeze(*model, "bert.embeddings");
  CHECK(f.changed.size() == 5);  // word, position, token type, LayerNorm weight and bias
  CHECK(f.elements == 3972864);
  CHECK(f.str() == "froze 5 parameter tensors (3,972,864 elements)\n");
  ParameterReport r = report_trainable_parameters(*model);
  CHECK(r.trainable == 413314);  // 4,386,178 − 3,972,864
  CHECK(r.total == 4386178);
  CHECK(row(r, "bert.embeddings").trainable == 0);
  CHECK(row(r, "bert.embeddings").total == 3972864);
  CHECK_FALSE(model->bert->embeddings->named_parameters()[0].second.requires_grad());
  // freezing again changes nothing; unfreezing restores
  CHECK(freeze(*model, "^bert\\.embeddings\\.").changed.empty());
  CHECK(unfreeze(*model, "embeddings").elements == 3972864);
  CHECK(report_trainable_parameters(*model).trainable == 4386178);
}

TEST_CASE("parameters: a tied weight counts once") {
  struct Tied : nn::Module {
    nn::ModulePtr a, b;
    Tied() {
      auto la = std::make_shared<nn::Linear>(3, 3);
      register_module("a", a, nn::ModulePtr(la));
      register_module("b", b, nn::ModulePtr(std::make_shared<nn::Linear>(la->weight, Tensor())));
    }
    std::string type_name() const override { return "Tied"; }
  };
  auto m = std::make_shared<Tied>();
  ParameterReport r = report_trainable_parameters(*m);
  CHECK(r.total == 9 + 3);  // the 3×3 weight once, a's bias
  CHECK(row(r, "a").total == 12);
  CHECK(row(r, "b").total == 9);
}

TEST_CASE("parameters: freeze refuses a pattern that matches nothing or is not a regex") {
  auto model = test::tiny_bert(1, 2000);
  CHECK(test::error_message([&] { freeze(*model, "bert.embedings"); }) ==
        "[freeze] pattern 'bert.embedings' matches no parameter path (paths look like "
        "bert.embeddings.word_embeddings.weight)");
  CHECK_THROWS_AS(freeze(*model, "("), ConfigError);
}

}  // namespace mase::graph
