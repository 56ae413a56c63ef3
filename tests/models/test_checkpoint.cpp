// tests/models/test_checkpoint.cpp — config.json and model directories: our round trip, a
// directory written by HF transformers, strict loading, HF checkpoint variants, bad input.
// The other direction (HF reading a directory we write) is checked by
// tests/fixtures/check_hf_load.py, which runs the "save_pretrained" case below.
#include <cstdlib>
#include <fstream>

#include "bert_fixture.h"
#include "helpers.h"
#include "models/checkpoint.h"
#include "models/safetensors.h"
#include "temp_dir.h"

using namespace mase;
using namespace mase::nn;
using nlohmann::json;

namespace test_checkpoint {

namespace {

const std::string kHfDir = MASE_FIXTURES_DIR "/hf_bert_tiny";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string config_error(json j) {
  try {
    BertConfig::from_json(j, "cfg.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

Tensor fixture_logits(BertForSequenceClassification& m, const test::BertFixture& fx) {
  m.eval();
  return m.forward(fx.at("input_ids"), fx.at("attention_mask"), fx.at("token_type_ids")).logits;
}

}  // namespace

TEST_CASE("checkpoint: config.json round-trips every field") {
  BertConfig c = BertConfig::preset("bert-small", 16000);
  c.hidden_dropout_prob = 0.05;
  c.attention_probs_dropout_prob = 0.15;
  c.classifier_dropout = 0.3;
  c.max_position_embeddings = 256;
  c.num_labels = 3;
  c.pad_token_id = 3;
  c.layer_norm_eps = 1e-6;
  c.initializer_range = 0.01;
  c.pooling = "mean";
  test::TempDir dir;
  save_config(c, dir.file("config.json"));
  BertConfig d = load_config(dir.file("config.json"));
  CHECK(d.to_json() == c.to_json());
  CHECK(d.vocab_size == 16000);
  CHECK(d.num_hidden_layers == 4);
  CHECK(d.classifier_dropout == std::optional<double>(0.3));
  CHECK(d.num_labels == 3);
  CHECK(d.pooling == "mean");
  // HF's form: num_labels travels as id2label, the model class as architectures
  json j = c.to_json();
  CHECK(j["id2label"] == json{{"0", "LABEL_0"}, {"1", "LABEL_1"}, {"2", "LABEL_2"}});
  CHECK(j["architectures"] == json::array({"BertForSequenceClassification"}));
  CHECK(j["model_type"] == "bert");
  // classifier_dropout null means "use hidden_dropout_prob", as in HF
  BertConfig e;
  CHECK(e.to_json()["classifier_dropout"].is_null());
  CHECK(BertConfig::from_json(e.to_json()).classifier_dropout_prob() == e.hidden_dropout_prob);
}

TEST_CASE("checkpoint: HF's config.json is read with HF's defaults for absent fields") {
  BertConfig c = load_config(kHfDir + "/config.json");
  CHECK(c.vocab_size == 100);
  CHECK(c.hidden_size == 32);
  CHECK(c.num_hidden_layers == 2);
  CHECK(c.num_attention_heads == 2);
  CHECK(c.intermediate_size == 64);
  CHECK(c.max_position_embeddings == 16);
  CHECK(c.hidden_dropout_prob == 0.0);
  CHECK(c.num_labels == 2);  // HF omits id2label for the default 2 labels
  CHECK(c.pooling == "cls");
  // a minimal config: everything else is HF's default (bert-base)
  BertConfig d = BertConfig::from_json(json{{"vocab_size", 50}});
  CHECK(d.hidden_size == 768);
  CHECK(d.num_hidden_layers == 12);
  CHECK(d.layer_norm_eps == 1e-12);
}

TEST_CASE("checkpoint: unsupported config fields are ConfigErrors naming the field") {
  json base = BertConfig::preset("bert-tiny", 100).to_json();
  auto with = [&](const char* key, json value) {
    json j = base;
    j[key] = value;
    return config_error(j);
  };
  CHECK(with("position_embedding_type", "relative_key") ==
        "[BertConfig] cfg.json: unsupported position_embedding_type \"relative_key\" (only \"absolute\" "
        "is implemented)");
  CHECK(contains(with("hidden_act", "relu"), "unsupported hidden_act \"relu\""));
  CHECK(contains(with("is_decoder", true), "unsupported is_decoder = true"));
  CHECK(contains(with("add_cross_attention", true), "unsupported add_cross_attention"));
  CHECK(contains(with("model_type", "roberta"), "unsupported model_type \"roberta\""));
  CHECK(contains(with("problem_type", "regression"), "unsupported problem_type \"regression\""));
  CHECK(contains(with("hidden_size", "128"), "cfg.json: expected hidden_size to be an integer, got \"128\""));
  CHECK(contains(with("num_attention_heads", 3), "hidden_size 128 is not divisible by num_attention_heads 3"));
  CHECK(contains(with("pooling", "max"), "expected pooling \"cls\" or \"mean\", got \"max\""));
  CHECK(contains(with("hidden_dropout_prob", 1.5), "expected hidden_dropout_prob in [0, 1), got 1.5"));
  CHECK(contains(with("id2label", json{{"0", "only"}}), "expected num_labels >= 2, got 1"));
  CHECK(contains(with("pad_token_id", 100), "pad_token_id 100 is outside the vocabulary"));
  CHECK(contains(config_error(json::array()), "expected a JSON object"));
}

TEST_CASE("checkpoint: a directory written by HF transformers loads and computes HF's logits") {
  test::BertFixture fx = test::load_bert_fixture();
  LoadReport report;
  auto model = from_pretrained(kHfDir, &report);
  CHECK(report.ignored.empty());
  CHECK(report.initialized.empty());
  CHECK(report.renamed.empty());
  test::check_close(fixture_logits(*model, fx), fx.at("logits"), 1e-6, 1e-5);
}

TEST_CASE("checkpoint: save_pretrained then from_pretrained gives the same model") {
  test::BertFixture fx = test::load_bert_fixture();
  auto model = from_pretrained(kHfDir);
  // MASE_BERT_EXPORT_DIR keeps the directory for tests/fixtures/check_hf_load.py (HF reads it)
  test::TempDir tmp;
  const char* keep = std::getenv("MASE_BERT_EXPORT_DIR");
  const std::string dir = keep ? std::string(keep) : tmp.file("run");
  save_pretrained(*model, dir);
  CHECK(std::filesystem::exists(dir + "/config.json"));
  CHECK(std::filesystem::exists(dir + "/model.safetensors"));
  CHECK(read_safetensors_header(dir + "/model.safetensors").metadata.at("format") == "pt");  // HF requires it
  auto again = from_pretrained(dir);
  CHECK(again->config().to_json() == model->config().to_json());
  auto a = model->state_dict(), b = again->state_dict();
  REQUIRE(a.size() == b.size());
  for (auto& [name, t] : a) test::check_close(b.at(name), t, 0, 0);
  test::check_close(fixture_logits(*again, fx), fx.at("logits"), 1e-6, 1e-5);
}

TEST_CASE("checkpoint: strict loading lists every mismatch in one error") {
  auto model = std::make_shared<BertForSequenceClassification>(load_config(kHfDir + "/config.json"));
  std::map<std::string, Tensor> state = test::load_bert_fixture().group("param");
  state.erase("bert.encoder.layer.1.output.dense.bias");
  state["bert.encoder.layer.2.output.dense.bias"] = Tensor::zeros({32});
  state["bert.pooler.dense.weight"] = Tensor::zeros({32, 31});
  std::string msg = test::error_message([&] { load_pretrained_weights(*model, state); });
  CHECK(msg == "[load_state_dict] checkpoint does not match the model: missing 1 key(s): "
               "bert.encoder.layer.1.output.dense.bias; unexpected 1 key(s): "
               "bert.encoder.layer.2.output.dense.bias; wrong shape: bert.pooler.dense.weight "
               "(checkpoint (32, 31), model (32, 32))");
  CHECK_THROWS_AS(load_pretrained_weights(*model, state), ConfigError);
  // an integer tensor where a weight belongs
  std::map<std::string, Tensor> ints = test::load_bert_fixture().group("param");
  ints["classifier.bias"] = Tensor::zeros({2}, DType::i32);
  CHECK_THROWS_AS(load_pretrained_weights(*model, ints), DTypeError);
}

TEST_CASE("checkpoint: HF checkpoint variants are normalised and reported") {
  test::BertFixture fx = test::load_bert_fixture();
  BertConfig config = load_config(kHfDir + "/config.json");
  std::map<std::string, Tensor> ref = fx.group("param");

  SUBCASE("TF-era LayerNorm gamma and beta") {
    std::map<std::string, Tensor> state;
    for (auto& [k, t] : ref) {
      std::string key = k;
      if (key.size() > 16 && key.substr(key.size() - 16) == "LayerNorm.weight") key.replace(key.size() - 6, 6, "gamma");
      if (key.size() > 14 && key.substr(key.size() - 14) == "LayerNorm.bias") key.replace(key.size() - 4, 4, "beta");
      state[key] = t;
    }
    auto m = std::make_shared<BertForSequenceClassification>(config);
    LoadReport r;
    load_pretrained_weights(*m, state, &r);
    CHECK(r.renamed.size() == 10);  // 5 LayerNorms × (gamma, beta)
    test::check_close(fixture_logits(*m, fx), fx.at("logits"), 1e-6, 1e-5);
  }
  SUBCASE("a bare BertModel with pre-training heads and the position_ids buffer") {
    std::map<std::string, Tensor> state;
    for (auto& [k, t] : ref)
      if (k.rfind("bert.", 0) == 0) state[k.substr(5)] = t;  // no prefix, no classifier
    state["cls.predictions.bias"] = Tensor::zeros({100});
    state["cls.seq_relationship.weight"] = Tensor::zeros({2, 32});
    state["embeddings.position_ids"] = Tensor::zeros({1, 16}, DType::i32);
    manual_seed(5);
    auto m = std::make_shared<BertForSequenceClassification>(config);
    Tensor fresh = m->state_dict().at("classifier.weight").detach().clone();
    LoadReport r;
    load_pretrained_weights(*m, state, &r);
    CHECK(r.ignored == std::vector<std::string>{"bert.embeddings.position_ids", "cls.predictions.bias",
                                                "cls.seq_relationship.weight"});
    CHECK(r.initialized == std::vector<std::string>{"classifier.bias", "classifier.weight"});
    auto sd = m->state_dict();
    for (auto& [k, t] : ref)
      if (k.rfind("bert.", 0) == 0) test::check_close(sd.at(k), t, 0, 0);
    test::check_close(sd.at("classifier.weight"), fresh, 0, 0);  // the fresh head is kept
  }
}

TEST_CASE("checkpoint: bad model directories are one clear error") {
  test::TempDir dir;
  CHECK_THROWS_AS(from_pretrained(dir.file("absent")), IoError);
  CHECK(test::error_message([&] { from_pretrained(dir.path.string()); }) ==
        "[from_pretrained] " + dir.path.string() +
            " has no model.safetensors (pytorch_model.bin is not read: convert it with transformers' "
            "save_pretrained(dir, safe_serialization=True))");
  std::filesystem::copy_file(kHfDir + "/model.safetensors", dir.file("model.safetensors"));
  CHECK(contains(test::error_message([&] { from_pretrained(dir.path.string()); }), "cannot open"));
  std::ofstream(dir.file("config.json")) << "{ not json";
  CHECK_THROWS_AS(from_pretrained(dir.path.string()), IoError);
  json j = load_config(kHfDir + "/config.json").to_json();
  j["position_embedding_type"] = "relative_key_query";
  std::ofstream(dir.file("config.json")) << j.dump();
  CHECK_THROWS_AS(from_pretrained(dir.path.string()), ConfigError);
  // weights that do not fit the config: refused before the model is built, naming both files
  j["position_embedding_type"] = "absolute";
  j["hidden_size"] = 64;
  std::ofstream(dir.file("config.json")) << j.dump();
  std::string msg = test::error_message([&] { from_pretrained(dir.path.string()); });
  CHECK(contains(msg, "[from_pretrained] " + dir.file("config.json") + ": expected vocab_size x "
                      "hidden_size = ["));
  CHECK(contains(msg, "to match bert.embeddings.word_embeddings.weight in " +
                          dir.file("model.safetensors")));
}

}  // namespace test_checkpoint
