// tests/quant/test_passes.cpp — the quantize pass (by type, name, regex; defaults; the caller's
// config untouched; warnings; errors before any change), the compression pipeline from
// TOML and JSON files, and the compression summary of packed MXINT8 layers.
#include <doctest/doctest.h>

#include <fstream>

#include "helpers.h"
#include "models/temp_dir.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quant_configs.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

namespace {

json integer_cfg(int width) {
  return {{"config",
           {{"name", "integer"},
            {"data_in_width", width},
            {"data_in_frac_width", width / 2},
            {"weight_width", width},
            {"weight_frac_width", width / 2},
            {"bias_width", width},
            {"bias_frac_width", width / 2}}}};
}

std::vector<std::string> keys_of(nn::Module& m) {
  std::vector<std::string> keys;
  for (auto& [k, t] : m.state_dict()) keys.push_back(k);
  return keys;
}

std::string type_at(nn::Module& m, const std::string& path) {
  return m.submodule(path)->type_name();
}

const char* kQuery0 = "bert.encoder.layer.0.attention.self.query";

}  // namespace

TEST_CASE("quantize by type replaces every Linear and keeps the state-dict keys") {
  auto m = test::tiny_bert();
  Tensor ids = test::tiny_ids(2, 7, 1);
  std::vector<std::string> keys = keys_of(*m);
  QuantizeReport r = quantize(*m, {{"by", "type"}, {"linear", integer_cfg(8)}});
  CHECK(r.quantized() == 14);
  CHECK(keys_of(*m) == keys);
  for (const QuantizeRow& row : r.layers) {
    CHECK(row.old_type == "Linear");
    CHECK(row.new_type == "QuantizedLinear");
    CHECK(row.weight == "integer(width=8, frac_width=4)");
  }
  CHECK(r.str().find("quantize: 14 of 14 Linear layers quantized") == 0);
  // the output differs from fp32 but stays close at 8 bits (a sanity check of the wiring)
  auto fp = test::tiny_bert();
  std::vector<float> a = m->forward(ids).to_vector<float>(),
                     b = fp->forward(ids).to_vector<float>();
  CHECK(a != b);
  for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) < 0.5);
  // formats with trainable parameters add keys and remove none
  auto br = test::tiny_bert();
  (void)quantize(*br,
                 {{"by", "type"}, {"default", {{"config", test::config_for("binary_residual")}}}});
  std::vector<std::string> more = keys_of(*br);
  CHECK(more.size() == keys.size() + 14 * 2);
  for (const std::string& k : keys) CHECK(std::find(more.begin(), more.end(), k) != more.end());
  CHECK(std::find(more.begin(), more.end(), std::string(kQuery0) + ".data_in_mu") != more.end());
}

TEST_CASE("quantize by name takes dotted paths and node names and defaults the rest") {
  auto m = test::tiny_bert();
  json cfg = {{"by", "name"},
              {"default", integer_cfg(16)},
              {kQuery0, integer_cfg(4)},
              {"bert_encoder_layer_1_output_dense", integer_cfg(6)},
              {"classifier", {{"config", {{"name", nullptr}}}}}};
  QuantizeReport r = quantize(*m, cfg);
  CHECK(r.warnings.empty());
  auto weight_of = [&](const std::string& path) {
    return dynamic_cast<QuantizedLinear&>(*m->submodule(path)).quantizers().weight.str();
  };
  CHECK(weight_of(kQuery0) == "integer(width=4, frac_width=2)");
  CHECK(weight_of("bert.encoder.layer.1.output.dense") == "integer(width=6, frac_width=3)");
  CHECK(weight_of("bert.pooler.dense") == "integer(width=16, frac_width=8)");
  CHECK(type_at(*m, "classifier") == "Linear");  // name null: left unquantized
  CHECK(r.quantized() == 13);
}

TEST_CASE("quantize by regex and its ambiguity error") {
  auto m = test::tiny_bert();
  QuantizeReport r = quantize(*m, {{"by", "regex"},
                                   {"attention\\.self\\.(query|key)$", integer_cfg(8)},
                                   {"_output_dense$", integer_cfg(6)}});
  CHECK(r.quantized() == 2 * 2 + 2 * 2);  // query, key; attention.output.dense, output.dense
  CHECK(type_at(*m, "bert.encoder.layer.1.attention.self.value") == "Linear");
  CHECK(type_at(*m, "bert.encoder.layer.1.attention.output.dense") == "QuantizedLinear");
  auto m2 = test::tiny_bert();
  json both = {{"by", "regex"}, {"query", integer_cfg(8)}, {"layer\\.0", integer_cfg(6)}};
  CHECK(test::error_message([&] { (void)quantize(*m2, both); }) ==
        std::string("[quantize] layer '") + kQuery0 +
            "' is matched by both 'layer\\.0' and 'query' (make the regex keys disjoint)");
  CHECK(type_at(*m2, kQuery0) == "Linear");  // an error changes nothing
  CHECK_THROWS_AS((void)quantize(*m2, {{"by", "regex"}, {"(", integer_cfg(8)}}), ConfigError);
}

TEST_CASE("quantize never mutates the caller's config and a second call works") {
  const json cfg = {{"by", "type"}, {"default", integer_cfg(8)}, {"seed", 5}};
  const json copy = cfg;
  auto a = test::tiny_bert(), b = test::tiny_bert();
  QuantizeReport ra = quantize(*a, cfg);
  CHECK(cfg == copy);
  QuantizeReport rb = quantize(*b, cfg);  // MASE popped "by": its second call failed
  CHECK(rb.to_json() == ra.to_json());
  // re-quantizing an already quantized model replaces the formats in place
  QuantizeReport again = quantize(*a, {{"by", "type"}, {"linear", integer_cfg(4)}});
  CHECK(again.layers[0].old_type == "QuantizedLinear");
  CHECK(again.layers[0].weight == "integer(width=4, frac_width=2)");
}

TEST_CASE("a key that matches no layer is an error with a did-you-mean and the layers") {
  auto m = test::tiny_bert();
  CHECK_THROWS_WITH_AS(
      (void)quantize(*m, {{"by", "name"}, {"bert.encoder.layer.0.attention.self.qeury", integer_cfg(8)}}),
      doctest::Contains("[quantize] expected each name key to match a layer, got "
                        "'bert.encoder.layer.0.attention.self.qeury' which matches none (did you "
                        "mean 'bert.encoder.layer.0.attention.self.query'? the Linear layers are: "
                        "bert.encoder.layer.0.attention.self.query, "),
      ConfigError);
  CHECK(linear_layers(*m)[0].second->type_name() == "Linear");  // nothing changed
  CHECK_THROWS_WITH_AS((void)quantize(*m, {{"by", "type"}, {"linaer", integer_cfg(8)}}),
                       doctest::Contains("did you mean 'linear'? the quantizable types are: linear"),
                       ConfigError);
}

TEST_CASE("quantize config errors change nothing") {
  auto m = test::tiny_bert();
  json bad = {
      {"by", "type"},
      {"linear",
       {{"config",
         {{"name", "integer"}, {"data_in_width", 8}, {"weight_width", 40}, {"bias_width", 8}}}}}};
  CHECK(test::error_message([&] { (void)quantize(*m, bad); }) ==
        "[quant] layer 'bert.encoder.layer.0.attention.self.query': expected weight_width in "
        "1..32, got 40");
  for (auto& [path, lin] : linear_layers(*m)) CHECK(lin->type_name() == "Linear");
  CHECK_THROWS_AS((void)quantize(*m, {{"by", "kind"}}), ConfigError);
  CHECK_THROWS_AS((void)quantize(*m, {{"linear", integer_cfg(8)}}), ConfigError);  // no "by"
  CHECK_THROWS_AS((void)quantize(*m, {{"by", "type"}, {"linear", {{"name", "integer"}}}}),
                  ConfigError);
}

TEST_CASE("the compression pipeline reads TOML and JSON and returns both reports") {
  test::TempDir dir;
  {
    std::ofstream t(dir.file("c.toml"));
    t << "# quantize then prune\n"
         "[quantize]\nby = \"type\"\n"
         "[quantize.linear.config]\nname = \"integer\"\ndata_in_width = 8\ndata_in_frac_width = 4\n"
         "weight_width = 8\nweight_frac_width = 4\nbias_width = 8\nbias_frac_width = 4\n"
         "[prune.weight]\nsparsity = 0.5\nmethod = \"l1-norm\"\nscope = \"global\"\n"
         "[prune.activation]\nsparsity = 0.25\nmethod = \"random\"\nscope = \"local\"\nseed = 3\n";
  }
  json from_toml = read_config_file(dir.file("c.toml"));
  {
    std::ofstream j(dir.file("c.json"));
    j << from_toml.dump(2);
  }
  CHECK(read_config_file(dir.file("c.json")) == from_toml);
  CHECK(from_toml["prune"]["weight"]["sparsity"] == 0.5);
  auto a = test::tiny_bert(), b = test::tiny_bert();
  CompressReport ra = compress(*a, from_toml),
                 rb = compress(*b, read_config_file(dir.file("c.json")));
  CHECK(ra.quantized);
  CHECK(ra.pruned);
  CHECK(ra.quantize.quantized() == 14);
  CHECK(ra.prune.pruned() == prune_count(0.5, ra.prune.weights()));
  CHECK(ra.to_json() == rb.to_json());
  auto& q = dynamic_cast<QuantizedLinear&>(*a->submodule(kQuery0));
  CHECK(q.type_name() == "QuantizedLinear");  // quantized and pruned: one module
  CHECK(q.weight_mask().defined());
  CHECK(q.activation_pruning()->str() == "random local 0.25");
  Tensor ids = test::tiny_ids(2, 5, 8);
  CHECK(a->forward(ids).to_vector<float>() == b->forward(ids).to_vector<float>());
  // bad files
  CHECK_THROWS_AS(read_config_file(dir.file("missing.toml")), IoError);
  {
    std::ofstream t(dir.file("bad.toml"));
    t << "[prune.weight]\nsparsity = = 0.5\n";
  }
  CHECK(test::error_message([&] { read_config_file(dir.file("bad.toml")); }).find("bad.toml:2:") !=
        std::string::npos);
  CHECK_THROWS_AS((void)compress(*a, {{"quantise", json::object()}}), ConfigError);
}

TEST_CASE("compression_summary counts a packed MXINT8 layer's zeros from its codes") {
  // 17472 Linear weights in tiny_bert (test_mxint8_linear.cpp adds them up); the pooler's
  // (32, 32) weight set by hand: 0 where k % 4 == 0 (8 per row, 256 in all), ±0.5 elsewhere —
  // one block per row, max 0.5, so no 0.5 rounds to zero: exactly 256 zero codes once packed
  const int64_t total = 17472;
  auto m = test::tiny_bert();
  auto& pooler = dynamic_cast<nn::Linear&>(*m->submodule("bert.pooler.dense"));
  std::vector<float> w(32 * 32);
  for (int64_t i = 0; i < 32 * 32; ++i) w[i] = i % 4 == 0 ? 0.f : (i % 3 ? 0.5f : -0.5f);
  {
    NoGradGuard ng;
    copy_(pooler.weight, Tensor::from(w, {32, 32}));
  }
  (void)mxint8_weights(*m, "^bert\\.pooler");
  json s = compression_summary(*m);
  REQUIRE(s["layers"].size() == 1);
  CHECK(s["layers"][0]["type"] == "MxInt8Linear");
  CHECK(s["layers"][0]["weight_sparsity"].get<double>() == 0.25);
  CHECK(s["linear_weight_sparsity"].get<double>() == 256.0 / total);  // was 0: left out
  CHECK(s["mxint8"]["packed_elements"] == 32 * 32);

  // pruned layers and a pruned-then-packed one together: masks count for the first, codes for
  // the second (the mask is baked into the codes: the pruned weights and the hand zeros)
  auto p = test::tiny_bert();
  PruneReport pr = prune(*p, {{"weight", {{"sparsity", 0.5}}}});
  (void)mxint8_weights(*p, "^bert\\.pooler");
  auto& mx = dynamic_cast<MxInt8Linear&>(*p->submodule("bert.pooler.dense"));
  int64_t pooler_zeros = 0;  // the oracle: dequantized values that are zero
  for (float v : mx.dequantized_weight().to_vector<float>()) pooler_zeros += v == 0.f;
  CHECK(pooler_zeros >= 512);
  int64_t others = 0;
  for (const PruneRow& r : pr.layers) others += r.layer == "bert.pooler.dense" ? 0 : r.pruned;
  json ps = compression_summary(*p);
  REQUIRE(ps["layers"].size() == 14);
  for (const json& l : ps["layers"])
    if (l["layer"] == "bert.pooler.dense")
      CHECK(l["weight_sparsity"].get<double>() == double(pooler_zeros) / 1024);
  CHECK(ps["linear_weight_sparsity"].get<double>() == double(others + pooler_zeros) / total);
}
