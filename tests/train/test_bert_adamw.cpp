// tests/train/test_bert_adamw.cpp — five AdamW steps on BERT follow PyTorch's losses: the
// model's forward and backward (models/bert) and train's AdamW together, against the losses
// that tests/fixtures/gen_bert.py recorded with HF transformers and torch.optim.AdamW
// (lr 1e-3, weight decay 0.01 on every parameter, other arguments default).
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "models/bert.h"
#include "models/bert_fixture.h"
#include "train/adamw.h"

using namespace mase;
using namespace mase::nn;

TEST_CASE("bert + AdamW: five steps follow PyTorch's losses") {
  test::BertFixture fx = test::load_bert_fixture();
  std::vector<float> expected = fx.at("adamw_losses").to_vector<float>();
  REQUIRE(expected.size() == 5);
  for (bool fused : {true, false}) {
    INFO("fused " << fused);
    auto model = std::make_shared<BertForSequenceClassification>(
        BertConfig::from_json(nlohmann::json::parse(fx.config_json), "fixture"));
    model->load_state_dict(fx.group("param"));
    model->eval();  // the fixture has dropout off
    auto loss = [&] {
      return model->forward(fx.at("input_ids"), fx.at("attention_mask"), fx.at("token_type_ids"),
                            fx.at("labels")).loss;
    };
    // torch.optim.AdamW(model.parameters(), ...) decays every parameter: no no-decay rule
    train::AdamW opt(model->named_parameters(), {.lr = 1e-3, .weight_decay = 0.01, .fused = fused},
                     nullptr);
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      backward(loss());
      opt.step();
      INFO("loss after step " << step + 1);
      CHECK(loss().item() == doctest::Approx(expected[step]).epsilon(1e-5));
    }
  }
}
