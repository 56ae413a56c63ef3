// tests/search/test_lab_spaces.cpp — Lab 2.1's Linear-or-Identity choice and Lab 3's per-layer
// precision space: what a trial asks for is what the model gets.
// Oracles: BERT's structure (which Linears are square, by hand), the quantize pass's report
// (the format each layer really got), bits per weight by hand.
#include <doctest/doctest.h>

#include "models/bert.h"
#include "quant/format.h"
#include "quant/passes.h"
#include "runtime/error.h"
#include "search/lab_plot.h"
#include "search/lab_spaces.h"
#include "search/objectives.h"

using namespace mase;
using namespace mase::search;

namespace {

std::shared_ptr<nn::BertForSequenceClassification> tiny(int64_t hidden, int64_t intermediate) {
  nn::BertConfig c = nn::BertConfig::preset("bert-tiny", 100);
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = 2;
  return std::make_shared<nn::BertForSequenceClassification>(c);
}

std::vector<std::string> types_of(nn::Module& m, const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(m.submodule(p)->type_name());
  return out;
}

// Params of `space` with every categorical at the choice named in `set` (else choice 0).
Params pick(const Space& space, const std::map<std::string, std::string>& set) {
  Values v;
  for (const Param& p : space.params()) {
    v[p.name] = 0;
    if (set.count(p.name)) v[p.name] = p.parse(set.at(p.name));
  }
  return Params(space, v);
}

}  // namespace

TEST_CASE("tutorial space: the shared choice adds one parameter and doubles the grid") {
  Space s = tutorial_space(LinearChoice::shared, lab2_space());
  CHECK(s.grid_size() == 600);
  CHECK(s.at("linear_layer").choices == std::vector<std::string>{"linear", "identity"});
  CHECK(tutorial_space(LinearChoice::none, lab2_space()).grid_size() == 300);
  // per layer: 6 Linears per block for the deepest model (8 layers) plus the pooler
  Space per = tutorial_space(LinearChoice::per_layer, lab2_space());
  CHECK(per.params().size() == 4 + 8 * 6 + 1);
  CHECK(per.at("bert.encoder.layer.7.attention.self.query_type").choices.size() == 2);
}

TEST_CASE("architecture space: the tutorial's lists give lab2_space, smaller lists a smaller one") {
  Space full = architecture_space({2, 4, 8}, {2, 4, 8, 16}, {128, 192, 256, 384, 512},
                                  {512, 768, 1024, 1536, 2048});
  CHECK(full.grid_size() == lab2_space().grid_size());
  CHECK(architecture_text(full) == "L{2,4,8} A{2,4,8,16} H{128,192,256,384,512} "
                                   "I{512,768,1024,1536,2048}");
  Space small = architecture_space({2}, {2, 4}, {128}, {512, 768});
  CHECK(tutorial_space(LinearChoice::shared, small).grid_size() == 1 * 2 * 1 * 2 * 2);
  // per layer: the deepest model of this space has 2 blocks
  CHECK(tutorial_space(LinearChoice::per_layer, small).params().size() == 4 + 2 * 6 + 1);
}

TEST_CASE("linear or identity: shared identity replaces every square Linear and nothing else") {
  auto m = tiny(32, 64);  // Q K V, attention output and pooler square; FFN not
  Space s = tutorial_space(LinearChoice::shared, lab2_space());
  auto replaced = apply_linear_choice(*m, pick(s, {{"linear_layer", "identity"}}));
  CHECK(replaced.size() == 2 * 4 + 1);
  const std::string b = "bert.encoder.layer.1.";
  CHECK(types_of(*m, {b + "attention.self.query", b + "attention.self.key",
                      b + "attention.self.value", b + "attention.output.dense",
                      "bert.pooler.dense"}) ==
        std::vector<std::string>(5, "Identity"));
  CHECK(types_of(*m, {b + "intermediate.dense", b + "output.dense", "classifier"}) ==
        std::vector<std::string>(3, "Linear"));
  // the model still runs: (B, T) ids -> (B, 2) logits
  Tensor ids = Tensor::zeros({2, 5}, DType::i32);
  CHECK(m->forward(ids).shape() == Shape{2, 2});

  auto kept = tiny(32, 64);
  CHECK(apply_linear_choice(*kept, pick(s, {{"linear_layer", "linear"}})).empty());
}

TEST_CASE("linear or identity: the FFN's Linears are square when I == H, and per-layer picks one") {
  auto m = tiny(32, 32);
  Space shared = tutorial_space(LinearChoice::shared, lab2_space());
  CHECK(apply_linear_choice(*m, pick(shared, {{"linear_layer", "identity"}})).size() == 2 * 6 + 1);

  auto one = tiny(32, 64);
  Space per = tutorial_space(LinearChoice::per_layer, lab2_space());
  auto replaced = apply_linear_choice(
      *one, pick(per, {{"bert.encoder.layer.0.attention.self.key_type", "identity"},
                       {"bert.encoder.layer.5.attention.self.key_type", "identity"}}));
  CHECK(replaced == std::vector<std::string>{"bert.encoder.layer.0.attention.self.key"});
  CHECK(one->submodule("bert.encoder.layer.1.attention.self.key")->type_name() == "Linear");
}

TEST_CASE("precision space: the trial's per-layer formats are what the quantize pass applies") {
  auto m = tiny(32, 64);
  std::vector<std::string> layers;
  std::vector<int64_t> sizes;
  for (const auto& [name, lin] : quant::linear_layers(*m)) {
    layers.push_back(name);
    sizes.push_back(lin->weight.numel());
  }
  REQUIRE(layers.size() == 14);
  Space s = precision_space(layers, format_choices({"integer"}, {8, 16, 32}, {2, 4, 8}));
  CHECK(s.params().size() == 14 * 3);
  const std::string q = "bert.encoder.layer.0.attention.self.query";
  Params p = pick(s, {{q + ":format", "integer"}, {q + ":integer.width", "16"},
                      {q + ":integer.frac_width", "4"}, {"classifier:format", "integer"},
                      {"classifier:integer.width", "8"}, {"classifier:integer.frac_width", "8"}});
  nlohmann::json cfg = precision_quant_config(p, layers);
  CHECK(cfg[q]["config"]["weight_width"] == 16);
  CHECK(cfg[q]["config"]["data_in_frac_width"] == 4);
  CHECK(cfg[q]["config"]["bias_width"] == 16);
  CHECK_FALSE(cfg.contains("bert.pooler.dense"));  // full precision: the default (none)

  const quant::QuantizeReport r = quant::quantize(*m, cfg);
  CHECK(r.quantized() == 2);
  for (const auto& row : r.layers) {
    if (row.layer == q) CHECK(row.weight == "integer(width=16, frac_width=4)");
    else if (row.layer == "classifier") CHECK(row.data_in == "integer(width=8, frac_width=8)");
    else CHECK(row.weight == "none");
  }
  // bits per weight: query 32x32 at 16 bits, classifier 2x32 at 8, the rest at 32
  double total = 0, bits = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    total += sizes[i];
    bits += sizes[i] * (layers[i] == q ? 16.0 : layers[i] == "classifier" ? 8.0 : 32.0);
  }
  CHECK(average_weight_bits(cfg, layers, sizes) == doctest::Approx(bits / total));
}

TEST_CASE("precision space: every format's choices give configs the quantize pass accepts") {
  auto formats = format_choices({"all"}, {8}, {4});
  CHECK(formats.size() == all_format_names().size());
  Space s = precision_space({"classifier"}, formats);
  // the last choice of every parameter (the widest settings), each format in turn
  for (const FormatChoices& f : formats) {
    std::map<std::string, std::string> set = {{"classifier:format", f.format}};
    for (const auto& [key, choices] : f.params) set["classifier:" + f.format + "." + key] = choices.back();
    auto m = tiny(32, 64);
    CHECK_NOTHROW((void)quant::quantize(*m, precision_quant_config(pick(s, set), {"classifier"})));
  }
}

TEST_CASE("precision space: bad lists name their flag") {
  auto throws_with = [](auto f, const char* text) {
    try {
      f();
      FAIL("no ConfigError");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  throws_with([] { format_choices({"integer", "fp7"}, {8}, {4}); }, "--formats: unknown format 'fp7'");
  throws_with([] { format_choices({"integer"}, {8, 40}, {4}); }, "--widths in 2..32, got 40");
  throws_with([] { format_choices({"integer"}, {8, 4}, {2, 8}); }, "--frac-widths in 0..4");
  throws_with([] { format_choices({"integer"}, {}, {4}); }, "non-empty list for --widths");
  throws_with([] { format_choices({}, {8}, {4}); }, "non-empty list for --formats");
  throws_with([] { linear_choice_from("some"); }, "--linear-choice");
  throws_with([] { architecture_space({2}, {}, {128}, {512}); }, "non-empty list for --num-heads");
  throws_with([] { architecture_space({2}, {2}, {0}, {512}); }, "--hidden-sizes >= 1, got 0");
}

TEST_CASE("pareto front: the trials no other beats on both bits and accuracy") {
  auto rec = [](int64_t n, double bits, double acc) {
    TrialRecord r;
    r.trial.number = n;
    r.trial.state = TrialState::complete;
    r.trial.value = acc;
    r.attrs["avg_weight_bits"] = std::to_string(bits);
    return r;
  };
  std::vector<TrialRecord> t = {rec(0, 32, 0.85), rec(1, 16, 0.84), rec(2, 16, 0.80),
                                rec(3, 8, 0.70), rec(4, 24, 0.83), rec(5, 8, 0.75)};
  std::vector<int64_t> numbers;
  for (const auto& r : pareto_front(t, "avg_weight_bits")) numbers.push_back(r.trial.number);
  CHECK(numbers == std::vector<int64_t>{5, 1, 0});
}

TEST_CASE("precision space: a binary_residual weight counts 1 bit, whatever its levels") {
  // |γ|·sign(w) is one bit per weight; `levels` is the activations' residual depth
  const nlohmann::json cfg = {
      {"fc", {{"config", {{"name", "binary_residual"}, {"levels", 3}}}}}};
  CHECK(average_weight_bits(cfg, {"fc", "rest"}, {100, 100}) == doctest::Approx((1 + 32) / 2.0));
  CHECK(quant::make_format("binary_residual", {{"levels", 3}}).bits_per_element() == 3);
}
