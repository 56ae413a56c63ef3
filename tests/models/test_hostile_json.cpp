// tests/models/test_hostile_json.cpp — JSON that is built to crash a reader: 100,000 levels of
// nesting (nlohmann's dump() in an error path overflowed the stack), sizes that would allocate
// until the machine dies (num_hidden_layers 1e9, vocab_size 2^40), sizes that contradict the
// checkpoint. Each is one error line naming the file and the key. See models/json_io.h.
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "helpers.h"
#include "models/checkpoint.h"
#include "models/json_io.h"
#include "models/safetensors.h"
#include "temp_dir.h"

using namespace mase;
using namespace mase::nn;

namespace test_hostile_json {

namespace {

const std::string kHfDir = MASE_FIXTURES_DIR "/hf_bert_tiny";

std::string nested(int levels, const std::string& inner = "1") {
  return std::string(levels, '[') + inner + std::string(levels, ']');
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// config.json of the HF fixture with one key replaced
std::string config_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(kHfDir + "/config.json"));
  j[key] = value;
  return j.dump();
}

}  // namespace

TEST_CASE("hostile json: depth is measured outside strings and stops at the limit") {
  CHECK(json_depth(R"({"a": [1, {"b": "[[[["}]})") == 3);
  CHECK(json_depth(R"("\"[[[")") == 0);
  CHECK(json_depth(nested(100'000)) == kMaxJsonDepth + 1);
  CHECK(brief(nlohmann::json(std::string(500, 'x'))).size() == 63);
}

TEST_CASE("hostile json: a safetensors header nested 100000 levels is one error line") {
  test::TempDir dir;
  const std::string header = R"({"w": )" + nested(100'000) + "}";
  std::ofstream f(dir.file("deep.safetensors"), std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(header.size() >> (8 * i)));
  f << header;
  f.close();
  const std::string msg = test::error_message([&] { load_safetensors(dir.file("deep.safetensors")); });
  CHECK(msg == "[safetensors] " + dir.file("deep.safetensors") +
                   ": expected a header nested at most 64 levels deep, got more (a corrupt or "
                   "hostile file?)");
}

TEST_CASE("hostile json: a config.json nested 100000 levels is one error line") {
  test::TempDir dir;
  write_text(dir.file("config.json"), R"({"hidden_size": )" + nested(100'000) + "}");
  const std::string msg = test::error_message([&] { load_config(dir.file("config.json")); });
  CHECK(msg == "[load_config] " + dir.file("config.json") +
                   ": expected JSON nested at most 64 levels deep, got more (a corrupt or hostile "
                   "file?)");
  // 50 levels parse, and the error shows a clipped value, not 100 KB of brackets
  write_text(dir.file("config.json"), config_with("hidden_size", nlohmann::json::parse(nested(50))));
  const std::string typed = test::error_message([&] { load_config(dir.file("config.json")); });
  CHECK(contains(typed, "expected hidden_size to be an integer, got [[[["));
  CHECK(typed.size() < 200);
}

TEST_CASE("hostile json: unbounded sizes in config.json are refused naming the key") {
  test::TempDir dir;
  const std::string cfg = dir.file("config.json");
  const auto refused = [&](const std::string& key, const nlohmann::json& v, const std::string& part) {
    write_text(cfg, config_with(key, v));
    const std::string msg = test::error_message([&] { load_config(cfg); });
    INFO(msg);
    CHECK(contains(msg, "[BertConfig] " + cfg + ": " + part));
  };
  refused("num_hidden_layers", 1'000'000'000, "expected num_hidden_layers <= 256, got 1000000000");
  refused("vocab_size", int64_t{1} << 40, "expected vocab_size <= 4194304, got 1099511627776");
  refused("hidden_size", 1 << 20, "expected hidden_size <= 16384, got 1048576");
  refused("intermediate_size", int64_t{1} << 62, "expected intermediate_size <= 65536");
  refused("hidden_size", 16384, "expected at most 2147483648 parameters, got about");
  refused("num_hidden_layers", 1e9, "expected num_hidden_layers to be an integer, got 1000000000.0");
}

TEST_CASE("hostile json: config sizes that contradict the checkpoint are refused before allocating") {
  test::TempDir dir;
  std::filesystem::copy_file(kHfDir + "/model.safetensors", dir.file("model.safetensors"));
  const int64_t layers = load_config(kHfDir + "/config.json").num_hidden_layers;
  write_text(dir.file("config.json"), config_with("num_hidden_layers", layers + 3));
  const std::string msg = test::error_message([&] { from_pretrained(dir.path.string()); });
  CHECK(msg == "[from_pretrained] " + dir.file("config.json") + ": expected num_hidden_layers to "
                   "match the " + std::to_string(layers) + " encoder layers in " +
                   dir.file("model.safetensors") + ", got " + std::to_string(layers + 3));
}

TEST_CASE("hostile weights: NaN and inf in a checkpoint are reported on load") {
  test::TempDir dir;
  std::filesystem::copy_file(kHfDir + "/config.json", dir.file("config.json"));
  auto tensors = load_safetensors(kHfDir + "/model.safetensors").tensors;
  Tensor& w = tensors.at("bert.embeddings.word_embeddings.weight");
  w.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  tensors.at("classifier.bias").data<float>()[0] = std::numeric_limits<float>::infinity();
  save_safetensors(dir.file("model.safetensors"), tensors);
  LoadReport report;
  (void)from_pretrained(dir.path.string(), &report);
  CHECK(report.non_finite == std::vector<std::string>{"bert.embeddings.word_embeddings.weight",
                                                      "classifier.bias"});
  LoadReport clean;
  (void)from_pretrained(kHfDir, &clean);
  CHECK(clean.non_finite.empty());
}

}  // namespace test_hostile_json
