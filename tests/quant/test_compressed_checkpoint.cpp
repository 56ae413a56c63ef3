// tests/quant/test_compressed_checkpoint.cpp — quantized, pruned and MXINT8 models save and
// reload (masks, formats, packed weights, generator positions) and evaluate identically.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "models/checkpoint.h"
#include "models/safetensors.h"
#include "models/temp_dir.h"
#include "quant/checkpoint.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quant_configs.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

namespace {

std::vector<float> eval(nn::BertForSequenceClassification& m, const Tensor& ids) {
  NoGradGuard ng;
  return m.forward(ids).to_vector<float>();
}

}  // namespace

TEST_CASE("a quantized and pruned BERT saves, reloads and evaluates identically") {
  Tensor ids = test::tiny_ids(3, 6, 2);
  for (const char* format : {"integer", "binary_residual", "block_minifloat"}) {
    INFO(format);
    test::TempDir dir;
    auto m = test::tiny_bert();
    json cfg = {
        {"quantize", {{"by", "type"}, {"linear", {{"config", test::config_for(format)}}}}},
        {"prune",
         {{"weight", {{"sparsity", 0.3}, {"method", "random"}, {"scope", "global"}, {"seed", 4}}},
          {"activation", {{"sparsity", 0.2}, {"method", "random"}}}}}};
    (void)compress(*m, cfg);
    (void)eval(*m, ids);  // advance the activation generators: their positions must be saved
    save_compressed(*m, dir.path.string());
    CHECK(std::filesystem::exists(dir.file("compression.json")));
    auto r = load_compressed(dir.path.string());
    r->eval();
    CHECK(compression_layers(*r) == compression_layers(*m));
    CHECK(sparsity_report(*r).to_json() == sparsity_report(*m).to_json());
    CHECK(eval(*r, ids) == eval(*m, ids));
    CHECK(eval(*r, ids) == eval(*m, ids));  // and again, with fresh random activation masks
    json summary = compression_summary(*r);
    CHECK(summary["layers"].size() == 14);
    CHECK(summary["linear_weight_sparsity"].get<double>() == doctest::Approx(0.3).epsilon(1e-3));
  }
}

TEST_CASE("an MXINT8 model saves its packed weights and reloads identically") {
  test::TempDir dir;
  Tensor ids = test::tiny_ids(2, 5, 7);
  auto m = test::tiny_bert();
  (void)mxint8_weights(*m, "encoder");
  save_compressed(*m, dir.path.string());
  auto st = nn::load_safetensors(dir.file("model.safetensors")).tensors;
  CHECK(st.count("bert.encoder.layer.0.attention.self.query.weight") == 0);
  CHECK(st.at("bert.encoder.layer.0.attention.self.query.weight_elements").dtype() == DType::i8);
  auto r = load_compressed(dir.path.string());
  r->eval();
  CHECK(r->submodule("bert.encoder.layer.1.output.dense")->type_name() == "MxInt8Linear");
  CHECK(r->submodule("bert.pooler.dense")->type_name() == "Linear");
  CHECK(eval(*r, ids) == eval(*m, ids));
  json summary = compression_summary(*r);
  CHECK(summary["layers"].size() == 12);
  CHECK(summary["mxint8"]["packed_elements"] == 2 * (4 * 32 * 32 + 2 * 64 * 32));
  CHECK(compression_summary(*test::tiny_bert()).is_null());
  // the file is smaller than the fp32 one by the packed weights' saving
  test::TempDir plain;
  nn::save_pretrained(*test::tiny_bert(), plain.path.string());
  const auto packed_size = std::filesystem::file_size(dir.file("model.safetensors"));
  const auto fp32_size = std::filesystem::file_size(plain.file("model.safetensors"));
  const int64_t encoder_weights = 2 * (4 * 32 * 32 + 2 * 64 * 32);
  const int64_t saved = 4 * encoder_weights - (encoder_weights + encoder_weights / 32);
  CHECK(std::abs(int64_t(fp32_size) - int64_t(packed_size) - saved) < 4096);  // headers differ
}

TEST_CASE("load_compressed reads plain directories and rejects bad sidecars") {
  test::TempDir dir;
  auto m = test::tiny_bert();
  {
    std::ofstream(dir.file("compression.json")) << "{}";  // stale: removed by the next save
  }
  save_compressed(*m, dir.path.string());  // a plain model: exactly save_pretrained's files
  CHECK(!std::filesystem::exists(dir.file("compression.json")));
  Tensor ids = test::tiny_ids(2, 4, 1);
  auto plain = load_compressed(dir.path.string());
  plain->eval();
  CHECK(eval(*plain, ids) == eval(*m, ids));
  auto write = [&](const std::string& text) {
    std::ofstream(dir.file("compression.json")) << text;
  };
  write("{\"format\": \"something else\"}");
  CHECK_THROWS_AS(load_compressed(dir.path.string()), IoError);
  // no layers: the folder claims compression but would load as plain fp32
  write("{\"format\": \"mase-compression\", \"version\": 1, \"layers\": {}}");
  CHECK(test::error_message([&] { load_compressed(dir.path.string()); }) ==
        "[load_compressed] " + dir.file("compression.json") + ": expected \"layers\" to name at "
        "least one compressed layer, got {} (delete the file to load the model as plain fp32)");
  write(
      "{\"format\": \"mase-compression\", \"version\": 1, \"layers\": {\"bert.nope\": {\"type\": "
      "\"MxInt8Linear\"}}}");
  CHECK_THROWS_AS(load_compressed(dir.path.string()), ConfigError);
  write(
      "{\"format\": \"mase-compression\", \"version\": 1, \"layers\": {\"classifier\": {\"type\": "
      "\"Conv\"}}}");
  CHECK(test::error_message([&] {
          load_compressed(dir.path.string());
        }).find("unknown type 'Conv'") != std::string::npos);
  // a sidecar announcing masks the weights file does not have: the strict load lists the keys
  write(
      "{\"format\": \"mase-compression\", \"version\": 1, \"layers\": {\"classifier\": {\"type\": "
      "\"QuantizedLinear\", \"quant\": {\"bypass\": true}, \"weight_mask\": true}}}");
  CHECK(test::error_message([&] {
          load_compressed(dir.path.string());
        }).find("missing 1 key(s): classifier.weight_mask") != std::string::npos);
}
