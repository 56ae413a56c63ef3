// tests/train/test_optimizer.cpp — what every optimizer shares: the no-decay rule and groups,
// parameter checks, state dicts (round trip and bad input).
#include "helpers.h"
#include "optim_helpers.h"
#include "train/adamw.h"
#include "train/sgd.h"

using namespace mase;
using namespace mase::train;
using mase::test::check_close;
using mase::test::param;
using mase::test::set_grad;

TEST_CASE("is_no_decay: biases and LayerNorm weights by their HF paths") {
  for (const char* path : {"bert.encoder.layer.0.attention.self.query.bias",
                           "bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias",
                           "model.layer_norm.weight", "encoder.norm.weight", "norm.weight",
                           "bias"}) {
    INFO(path);
    CHECK(is_no_decay(path));
  }
  for (const char* path : {"bert.encoder.layer.0.attention.self.query.weight",
                           "bert.embeddings.word_embeddings.weight", "classifier.weight",
                           "encoder.prenorm.weight", "biases.weight"}) {
    INFO(path);
    CHECK(!is_no_decay(path));
  }
}

TEST_CASE("decay_groups keeps the model order and takes another rule") {
  Tensor w = param({1, 2}, {1, 2}), b = param({1}), ln = param({1}), c = param({1, 2}, {2, 1});
  nn::NamedTensors ps{{"l.weight", w}, {"l.bias", b}, {"LayerNorm.weight", ln}, {"c.weight", c}};
  auto groups = decay_groups(ps, 0.01);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].params.size() == 2);
  CHECK(groups[0].params[0].first == "l.weight");
  CHECK(groups[0].params[1].first == "c.weight");
  CHECK(*groups[0].weight_decay == 0.01);
  CHECK(groups[1].params[0].first == "l.bias");
  CHECK(groups[1].params[1].first == "LayerNorm.weight");
  CHECK(*groups[1].weight_decay == 0.0);
  CHECK(!groups[0].lr.has_value());
  // another policy: no decay for every tensor with fewer than 2 dims
  auto rank1 = [](const std::string&, const Tensor& p) { return p.ndim() < 2; };
  auto by_rank = decay_groups(ps, 0.01, rank1);
  CHECK(by_rank[0].params.size() == 2);
  CHECK(by_rank[1].params.size() == 2);
  // everything in one group: the empty no-decay group is dropped
  CHECK(decay_groups(ps, 0.01, nullptr).size() == 1);
}

TEST_CASE("optimizer parameters are checked") {
  Tensor p = param({1, 2});
  CHECK(test::error_message([&] { AdamW({{"a", p}, {"a", param({1})}}); }) ==
        "[AdamW] parameter 'a' appears more than once (each parameter belongs to one group)");
  CHECK_THROWS_AS(AdamW({{"a", p}, {"tied", p}}), ConfigError);
  CHECK_THROWS_AS(SGD({{"a", Tensor()}}), ConfigError);
  CHECK_THROWS_AS(SGD({{"ids", Tensor::zeros({2}, DType::i32)}}), DTypeError);
  CHECK_THROWS_AS(AdamW(std::vector<ParamGroup>{ParamGroup{{{"a", p}}, -1.0, 0.0}}), ConfigError);
}

TEST_CASE("optimizer state_dict round trip continues the run exactly") {
  // A runs 3 steps; B runs 2 steps, saves, C (fresh, on copies of B's parameters) loads and
  // runs step 3. A and C must agree bit for bit, parameters and state.
  auto grads = [](int step) { return std::vector<float>{0.1f * step, -0.3f, 0.7f / step}; };
  for (bool adamw : {true, false}) {
    INFO((adamw ? "AdamW" : "SGD"));
    Tensor pa = param({1, 2, 3}), pb = param({1, 2, 3});
    auto make = [&](const Tensor& p) -> std::unique_ptr<Optimizer> {
      if (adamw) return std::make_unique<AdamW>(nn::NamedTensors{{"x.weight", p}});
      return std::make_unique<SGD>(nn::NamedTensors{{"x.weight", p}},
                                   SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
    };
    auto a = make(pa), b = make(pb);
    for (int step = 1; step <= 2; ++step) {
      set_grad(pa, grads(step));
      set_grad(pb, grads(step));
      a->step();
      b->step();
    }
    auto saved = b->state_dict();
    CHECK(saved.size() == (adamw ? 3u : 2u));
    CHECK(saved.at("x.weight.step").item() == 2);
    Tensor pc = test::clone_param(pb);
    auto c = make(pc);
    c->load_state_dict(saved);
    CHECK(c->step_count("x.weight") == 2);
    CHECK(!c->state_dict().begin()->second.is_same(saved.begin()->second));  // copied in
    set_grad(pa, grads(3));
    set_grad(pc, grads(3));
    a->step();
    c->step();
    CHECK(pc.to_vector<float>() == pa.to_vector<float>());
    for (const auto& [key, t] : a->state_dict())
      CHECK(c->state_dict().at(key).to_vector<double>() == t.to_vector<double>());
  }
}

TEST_CASE("optimizer load_state_dict rejects a state that does not fit and keeps its own") {
  Tensor p = param({1, 2});
  AdamW opt({{"w", p}});
  set_grad(p, {1, 1});
  opt.step();
  auto good = opt.state_dict();

  auto bad = good;
  bad["v.exp_avg"] = Tensor::zeros({2});        // no such parameter
  bad["w.momentum_buffer"] = Tensor::zeros({2}); // not an AdamW buffer
  bad["w.exp_avg_sq"] = Tensor::zeros({3});      // wrong shape
  std::string msg = test::error_message([&] { opt.load_state_dict(bad); });
  CHECK(msg.find("[AdamW.load_state_dict]") == 0);
  CHECK(msg.find("'v.exp_avg': no parameter 'v'") != std::string::npos);
  CHECK(msg.find("AdamW has no state named 'momentum_buffer'") != std::string::npos);
  CHECK(msg.find("'w.exp_avg_sq': expected (2) floating, got (3) f32") != std::string::npos);
  CHECK(opt.step_count("w") == 1);  // unchanged

  auto partial = good;
  partial.erase("w.exp_avg_sq");
  CHECK(test::error_message([&] { opt.load_state_dict(partial); }).find("missing 'w.exp_avg_sq'") !=
        std::string::npos);
  auto bad_step = good;
  bad_step["w.step"] = Tensor::scalar(1.5, DType::f64);
  CHECK_THROWS_AS(opt.load_state_dict(bad_step), ConfigError);
  CHECK(opt.state_dict().at("w.exp_avg").is_same(good.at("w.exp_avg")));  // still the same state

  opt.load_state_dict({});  // an empty state: as if no step was taken
  CHECK(opt.step_count("w") == 0);
  CHECK(opt.state_dict().empty());
}
