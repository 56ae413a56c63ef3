// tests/train/test_lora_flags.cpp — mase-train's --lora-rank / --lora-alpha / --lora-dropout /
// --lora-targets / --fuse-lora on the made-up IMDb (trainer_fixture.h): a LoRA fine-tune of a
// trained run changes only the adapters and the head; the unfused folder reloads the adapters
// and evaluates bit for bit as the run's last evaluation; --fuse-lora saves a plain model that
// evaluates within float rounding of the unfused one. Resume: test_trainer_resume.cpp.
#include "helpers.h"
#include "models/safetensors.h"
#include "quant/checkpoint.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::NullOut;
using mase::test::read_json_file;
using mase::test::TrainFixture;
using nlohmann::json;

namespace {

std::map<std::string, std::vector<float>> tensors_of(const fs::path& file) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [k, t] : nn::load_safetensors(file.string()).tensors)
    if (t.dtype() == DType::f32) out[k] = t.to_vector<float>();
  return out;
}

// A LoRA fine-tune of run `base`: rank 2, alpha 4, 2 steps at a large lr so that B moves.
TrainConfig lora_run(const TrainFixture& fx, const std::string& name, bool fuse) {
  TrainConfig c = fx.config(name);
  c.init = fx.run("base").string();
  c.vocab = "";
  c.max_steps = 2;
  c.lr = 1e-2;
  c.warmup = 0;
  c.lora_rank = 2;
  c.lora_alpha = 4;
  c.fuse_lora = fuse;
  return c;
}

EvalResult eval_folder(const TrainFixture& fx, const fs::path& dir, NullOut& null) {
  TrainConfig e = fx.config("unused");
  e.init = dir.string();
  e.vocab = "";
  e.max_len = 0;
  return eval_only(e, null);
}

}  // namespace

TEST_CASE("mase-train --lora-rank: only the adapters and the head train, the folder reloads them") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  REQUIRE(train_new(fx.config("base"), null).status == TrainStatus::completed);
  REQUIRE(train_new(lora_run(fx, "lora", false), null).status == TrainStatus::completed);

  auto before = tensors_of(fx.run("base") / "model.safetensors");
  auto after = tensors_of(fx.run("lora") / "model.safetensors");
  int64_t adapters = 0;
  for (const auto& [key, v] : after) {
    INFO(key);
    if (key.ends_with("lora_A") || key.ends_with("lora_B")) {
      ++adapters;
      CHECK(key.starts_with("bert.encoder."));  // the default targets
      continue;
    }
    REQUIRE(before.count(key));
    if (key.starts_with("classifier.")) {
      CHECK(v != before[key]);  // the head trains
    } else {
      CHECK(v == before[key]);  // everything else is frozen, bit for bit
    }
  }
  // the fixture's encoder layer has 6 Linears (q, k, v, attention out, FFN in, out): A and B each
  CHECK(adapters == 12);
  // B starts at zero and must have moved: otherwise the adapters did nothing
  bool b_moved = false;
  for (const auto& [key, v] : after)
    if (key.ends_with("lora_B"))
      for (float x : v) b_moved = b_moved || x != 0.0f;
  CHECK(b_moved);

  // the unfused folder rebuilds its LoraLinears (compression.json) and evaluates as the run did
  json fin = read_json_file(fx.run("lora") / "final.json");
  CHECK(fin["config"]["lora_rank"] == 2);
  auto m = quant::load_compressed(fx.run("lora").string());
  CHECK(m->submodule("bert.encoder.layer.0.attention.self.query")->type_name() == "LoraLinear");
  CHECK(eval_folder(fx, fx.run("lora"), null).loss == fin["test_loss"].get<double>());
}

TEST_CASE("mase-train --fuse-lora: a plain model that evaluates as the unfused one") {
  TrainFixture fx;
  NullOut null;
  clear_stop();
  REQUIRE(train_new(fx.config("base"), null).status == TrainStatus::completed);
  REQUIRE(train_new(lora_run(fx, "fused", true), null).status == TrainStatus::completed);
  REQUIRE(train_new(lora_run(fx, "unfused", false), null).status == TrainStatus::completed);

  for (const auto& [key, v] : tensors_of(fx.run("fused") / "model.safetensors")) {
    INFO(key);
    CHECK_FALSE(key.find("lora_") != std::string::npos);  // HF's keys only
  }
  CHECK_FALSE(fs::exists(fx.run("fused") / "compression.json"));
  // the same training (same seed), so the fused model is the unfused one folded: W + (α/r)·B·A
  const double fused = eval_folder(fx, fx.run("fused"), null).loss;
  const double unfused = eval_folder(fx, fx.run("unfused"), null).loss;
  CHECK(fused == doctest::Approx(unfused).epsilon(1e-5));
  CHECK(read_json_file(fx.run("fused") / "final.json")["test_loss"].get<double>() == unfused);
}

TEST_CASE("mase-train LoRA flags: bad values fail before any work") {
  TrainFixture fx;
  NullOut null;
  TrainConfig c = fx.config("run");
  c.fuse_lora = true;  // without --lora-rank
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--lora-rank"), ConfigError);
  c.lora_rank = 2;
  c.lora_alpha = 0;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--lora-alpha > 0"), ConfigError);
  c.lora_alpha = 4;
  c.lora_dropout = 1;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--lora-dropout in [0, 1)"), ConfigError);
  c.lora_dropout = 0;
  c.lora_targets = "^nothing\\.";
  CHECK_THROWS_WITH_AS(train_new(c, null), doctest::Contains("match no Linear"), ConfigError);
  CHECK_FALSE(fs::exists(fx.run("run")));
  TrainConfig huge = fx.config("run");  // a rank above min(in, out) of a targeted Linear
  huge.lora_rank = 100000;
  CHECK_THROWS_WITH_AS(train_new(huge, null), doctest::Contains("[insert_lora] expected a rank in 1.."),
                       ConfigError);
  CHECK_FALSE(fs::exists(fx.run("run")));
  TrainConfig back = TrainConfig::from_json(c.to_json(), "test");
  CHECK(back.lora_rank == 2);
  CHECK(back.lora_targets == c.lora_targets);
  CHECK(back.fuse_lora);
}
