// tests/train/test_compression_flags.cpp — mase-train's --quant, --prune, --compress and
// --mxint8-weights on the made-up IMDb (trainer_fixture.h): QAT runs record every layer's format
// and sparsity in final.json and save a folder that reloads them; --eval-only with them is PTQ;
// bad combinations are refused before anything is written; --device cuda is allowed with them
// (without a GPU: the device error). Resume: test_trainer_resume.cpp.
#include "helpers.h"
#include "models/safetensors.h"
#include "quant/checkpoint.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::NullOut;
using mase::test::read_json_file;
using mase::test::TrainFixture;
using mase::test::write_bytes;
using nlohmann::json;

namespace {

const char* kInt8 =
    R"({"by": "type", "default": {"config": {"name": "integer", "data_in_width": 8,
        "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4, "bias_width": 8,
        "bias_frac_width": 4}}})";
const char* kPrune = "[weight]\nsparsity = 0.5\nmethod = \"l1-norm\"\nscope = \"global\"\n";

// The fixture's BERT (1 layer) has 8 Linears: q, k, v, attention output, intermediate, output,
// pooler, classifier.
constexpr size_t kLinears = 8;

}  // namespace

TEST_CASE("mase-train --quant --prune: QAT run with formats and sparsity in final.json") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  write_bytes(fx.dir.path / "int8.json", kInt8);
  write_bytes(fx.dir.path / "prune.toml", kPrune);
  TrainConfig c = fx.config("run");
  c.quant = (fx.dir.path / "int8.json").string();
  c.prune = (fx.dir.path / "prune.toml").string();
  c.pooling = "mean";  // from scratch, mean pooling moves the loss within these few steps
  TrainResult r = train_new(c, null);
  REQUIRE(r.status == TrainStatus::completed);
  CHECK(r.losses.back() < r.losses.front());  // it trains through the quantizers

  json fin = read_json_file(fx.run("run") / "final.json");
  const json& comp = fin["compression"];
  REQUIRE(comp["layers"].size() == kLinears);
  CHECK(comp["layers"][0]["weight"] == "integer(width=8, frac_width=4)");
  CHECK(comp["layers"][0]["type"] == "QuantizedLinear");
  CHECK(comp["linear_weight_sparsity"].get<double>() == doctest::Approx(0.5).epsilon(1e-4));
  CHECK(fin["config"]["quant"] == c.quant);

  // the final model: masks fixed through training, pruned weights still exactly zero
  auto st = nn::load_safetensors((fx.run("run") / "model.safetensors").string()).tensors;
  int64_t masked = 0;
  for (const auto& [key, mask] : st) {
    if (!key.ends_with(".weight_mask")) continue;
    std::vector<uint8_t> m = mask.to_vector<uint8_t>();
    std::vector<float> w = st.at(key.substr(0, key.size() - 5)).to_vector<float>();
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i]) continue;
      ++masked;
      CHECK(w[i] == 0.0f);
    }
  }
  CHECK(masked > 0);

  // the folder reloads the same layers: --eval-only reproduces the final evaluation bitwise
  TrainConfig e = fx.config("unused");
  e.init = fx.run("run").string();
  e.vocab = "";
  e.max_len = 0;
  EvalResult ev = eval_only(e, null);
  CHECK(ev.loss == fin["test_loss"].get<double>());
  auto m = quant::load_compressed(fx.run("run").string());
  CHECK(m->submodule("classifier")->type_name() == "QuantizedLinear");
}

TEST_CASE("mase-train --eval-only --quant is post-training quantization") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  REQUIRE(train_new(fx.config("run"), null).status == TrainStatus::completed);
  write_bytes(fx.dir.path / "int8.json", kInt8);
  write_bytes(fx.dir.path / "int2.json",
              R"({"by": "type", "linear": {"config": {"name": "integer", "data_in_width": 2,
                  "weight_width": 2, "bias_width": 2}}})");
  write_bytes(fx.dir.path / "both.toml",
              std::string("[quantize]\nby = \"type\"\n[quantize.default.config]\nname = "
                          "\"integer\"\ndata_in_width = 8\ndata_in_frac_width = 4\nweight_width "
                          "= 8\nweight_frac_width = 4\nbias_width = 8\nbias_frac_width = 4\n"
                          "[prune.weight]\nsparsity = 0.5\nmethod = \"l1-norm\"\nscope = "
                          "\"global\"\n"));
  write_bytes(fx.dir.path / "prune.toml", kPrune);
  auto eval_with = [&](auto set) {
    TrainConfig e = fx.config("unused");
    e.init = fx.run("run").string();
    e.vocab = "";
    e.max_len = 0;
    set(e);
    return eval_only(e, null);
  };
  EvalResult fp = eval_with([](TrainConfig&) {});
  EvalResult q8 = eval_with([&](TrainConfig& e) { e.quant = (fx.dir.path / "int8.json").string(); });
  EvalResult q2 = eval_with([&](TrainConfig& e) { e.quant = (fx.dir.path / "int2.json").string(); });
  CHECK(q8.loss != fp.loss);  // quantized...
  CHECK(q2.loss != q8.loss);  // ...as configured
  // --compress FILE is --quant and --prune from one file
  EvalResult both = eval_with([&](TrainConfig& e) { e.compress = (fx.dir.path / "both.toml").string(); });
  EvalResult two = eval_with([&](TrainConfig& e) {
    e.quant = (fx.dir.path / "int8.json").string();
    e.prune = (fx.dir.path / "prune.toml").string();
  });
  CHECK(both.loss == two.loss);
  // MXINT8 weights: the packed model evaluates like the fake-quantized weights, near fp32
  EvalResult mx = eval_with([](TrainConfig& e) { e.mxint8_weights = true; });
  CHECK(std::abs(mx.loss - fp.loss) < 0.05);
  CHECK_FALSE(fs::exists(fx.run("unused")));  // evaluation writes nothing

  // --int8-kernels: on (the default) evaluates Q4.4 in integers through Int8Linear layers, off
  // fake-quantized in fp32; the same numbers up to fp32 reassociation
  std::FILE* log = std::tmpfile();
  TrainConfig e = fx.config("unused");
  e.init = fx.run("run").string();
  e.vocab = "";
  e.max_len = 0;
  e.quant = (fx.dir.path / "int8.json").string();
  EvalResult on = eval_only(e, log);
  e.int8_kernels = "off";
  EvalResult off = eval_only(e, null);
  CHECK(on.loss == q8.loss);
  CHECK(std::abs(on.loss - off.loss) < 1e-4 * std::abs(off.loss));
  CHECK(on.accuracy == off.accuracy);
  std::rewind(log);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  CHECK(text.find("integer inference: 8 Linear layer(s) now Int8Linear") != std::string::npos);
  e.int8_kernels = "maybe";
  CHECK_THROWS_AS(e.validate(), ConfigError);
}

TEST_CASE("mase-train compression flags: bad combinations and files fail before any work") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  write_bytes(fx.dir.path / "int8.json", kInt8);
  TrainConfig c = fx.config("run");
  c.compress = (fx.dir.path / "int8.json").string();
  c.quant = (fx.dir.path / "int8.json").string();
  CHECK_THROWS_AS(c.validate(), ConfigError);
  c.compress.clear();
  // --device cuda with --quant is a valid config (every quantizer has a CUDA twin); without a
  // GPU it fails on the device, DeviceError, not on the old "runs on the CPU" ConfigError
  c.device = "cuda";
  CHECK_NOTHROW(c.validate());
  if (!mase::test::gpu_present()) {
    const std::string msg = mase::test::error_message([&] { (void)train_new(c, null); });
    CHECK((msg.find("expected CUDA device") != std::string::npos ||
           msg.find("built without CUDA") != std::string::npos));
    CHECK(msg.find("run on the CPU") == std::string::npos);
    CHECK_THROWS_AS(train_new(c, null), DeviceError);
  }
  c.device = "cpu";
  c.quant = (fx.dir.path / "missing.toml").string();
  CHECK_THROWS_AS(train_new(c, null), IoError);
  c.quant = (fx.dir.path / "int8.json").string();
  c.prune = (fx.dir.path / "int8.json").string();  // a quantize config given as --prune
  CHECK_THROWS_AS(train_new(c, null), ConfigError);
  CHECK_FALSE(fs::exists(fx.run("run")));
  // LoRA on quantized Linears: refused (the adapter would wrap the fp32 weight and drop the
  // quantizers: QAT that trains unquantized, silently, as it did before)
  c.prune.clear();
  c.lora_rank = 2;
  CHECK_THROWS_WITH_AS(train_new(c, null), doctest::Contains("is a QuantizedLinear"), ConfigError);
  CHECK_FALSE(fs::exists(fx.run("run")));
  c.lora_rank = 0;
  // the fields round-trip through train_config.json
  c.mxint8_weights = true;
  TrainConfig back = TrainConfig::from_json(c.to_json(), "test");
  CHECK(back.quant == c.quant);
  CHECK(back.prune == c.prune);
  CHECK(back.mxint8_weights);
}

TEST_CASE("mase-train --quant: a layer-name typo is refused naming the config file") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  const fs::path cfg = fx.dir.path / "typo.json";
  write_bytes(cfg, R"({"by": "name", "bert.encoder.layer.0.attention.self.qeury": {"config": {"name": "integer",
      "data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4,
      "bias_width": 8, "bias_frac_width": 4}}})");
  TrainConfig c = fx.config("run");
  c.quant = cfg.string();
  const std::string msg = mase::test::error_message([&] { (void)train_new(c, null); });
  CHECK(msg.find("did you mean 'bert.encoder.layer.0.attention.self.query'?") != std::string::npos);
  CHECK(msg.find("(in " + cfg.string() + ")") != std::string::npos);
}
