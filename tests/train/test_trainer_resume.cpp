// tests/train/test_trainer_resume.cpp — stop (the Ctrl-C path) and --resume: a resumed run
// must reach bit-identical weights, losses and results to an uninterrupted one. Also the run
// folder's checkpoint rules (atomic replace, temporaries ignored, non-run folders refused).
#include <sstream>

#include "helpers.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::read_json_file;
using mase::test::TrainFixture;
using mase::test::weights_of;
using mase::test::write_bytes;

namespace {

std::vector<int64_t> logged_steps(const fs::path& jsonl) {
  std::ifstream in(jsonl);
  std::vector<int64_t> out;
  for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l)["step"]);
  return out;
}

// Trains `c` uninterrupted into run "full", and again into run "cut" stopped after step
// `stop_at` (as Ctrl-C does: request_stop from inside the loop) then resumed. Checks that
// both reach the same weights, losses, evaluations and logs.
void check_resume_equivalence(const TrainFixture& fx, TrainConfig c, int64_t stop_at) {
  std::FILE* null = fx.null;
  c.out = fx.run("full").string();
  TrainResult full = train_new(c, null);
  REQUIRE(full.status == TrainStatus::completed);

  c.out = fx.run("cut").string();
  TrainResult first = train_new(c, null, [&](int64_t step, double) {
    if (step == stop_at) request_stop();
  });
  REQUIRE(first.status == TrainStatus::interrupted);
  CHECK(first.step == stop_at);
  CHECK(first.message.find("--resume " + fx.run("cut").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(fx.run("cut") / "final.json"));
  clear_stop();  // what a new process starts with
  TrainResult second = resume(fx.run("cut"), {}, null);
  REQUIRE(second.status == TrainStatus::completed);

  // the steps after the stop are the uninterrupted run's, bit for bit
  std::vector<double> joined = first.losses;
  joined.insert(joined.end(), second.losses.begin(), second.losses.end());
  CHECK(joined == full.losses);
  auto wa = weights_of(fx.run("full") / "model.safetensors");
  auto wb = weights_of(fx.run("cut") / "model.safetensors");
  REQUIRE(wa.size() == wb.size());
  for (const auto& [name, v] : wa) {
    INFO(name);
    CHECK(v == wb.at(name));
  }
  auto fa = read_json_file(fx.run("full") / "final.json");
  auto fb = read_json_file(fx.run("cut") / "final.json");
  CHECK(fa["test_accuracy"] == fb["test_accuracy"]);
  CHECK(fa["test_loss"] == fb["test_loss"]);
  CHECK(fa["steps"] == fb["steps"]);
  CHECK(fa["train_tokens"] == fb["train_tokens"]);
  // the logs read as one run: every step once, in order
  CHECK(logged_steps(fx.run("cut") / "train_log.jsonl") ==
        logged_steps(fx.run("full") / "train_log.jsonl"));
}

}  // namespace

TEST_CASE("resume: stopped mid-epoch and resumed reaches bit-identical weights") {
  TrainFixture fx;
  TrainConfig c = fx.config("x");
  c.ckpt_every = 4;  // the stop at 7 is not on a checkpoint: the stop saves its own
  check_resume_equivalence(fx, c, 7);
}

TEST_CASE("resume: a quantized and pruned run (random activation masks) resumes bit-identically") {
  // the checkpoint holds the layers (compression.json), the masks and the activation
  // generators' positions: --quant / --prune are not re-run on resume
  TrainFixture fx;
  write_bytes(fx.dir.path / "q.json",
              R"({"by": "type", "default": {"config": {"name": "minifloat_ieee",
                  "data_in_width": 8, "data_in_exponent_width": 4, "weight_width": 8,
                  "weight_exponent_width": 4, "bias_width": 8, "bias_exponent_width": 4}}})");
  write_bytes(fx.dir.path / "p.json",
              R"({"weight": {"sparsity": 0.3, "method": "random", "seed": 5},
                  "activation": {"sparsity": 0.2, "method": "random"}})");
  TrainConfig c = fx.config("x");
  c.quant = (fx.dir.path / "q.json").string();
  c.prune = (fx.dir.path / "p.json").string();
  c.ckpt_every = 4;
  check_resume_equivalence(fx, c, 7);
}

TEST_CASE("resume: a LoRA run with adapter dropout resumes bit-identically") {
  // the checkpoint's compression.json rebuilds the LoraLinears; the frozen set is re-applied
  TrainFixture fx;
  TrainConfig c = fx.config("x");
  c.lora_rank = 2;
  c.lora_dropout = 0.1;
  c.lr = 1e-2;
  c.ckpt_every = 4;
  check_resume_equivalence(fx, c, 7);
}

TEST_CASE("resume: stopped on the last batch of an epoch resumes with the epoch's evaluation") {
  TrainFixture fx;
  check_resume_equivalence(fx, fx.config("x"), 12);  // 12 batches per epoch
  // the evaluation of epoch 1 was done by the resumed process, once
  std::ifstream in(fx.run("cut") / "metrics.csv");
  std::vector<std::string> rows;
  for (std::string l; std::getline(in, l);) rows.push_back(l);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].rfind("12,", 0) == 0);
  CHECK(rows[2].rfind("24,", 0) == 0);
}

TEST_CASE("resume: a second stop and resume in the same run still matches") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("full");
  TrainResult full = train_new(c, null);
  c.out = fx.run("cut").string();
  auto stop_at = [](int64_t n) {
    return [n](int64_t step, double) {
      if (step == n) request_stop();
    };
  };
  REQUIRE(train_new(c, null, stop_at(3)).status == TrainStatus::interrupted);
  clear_stop();
  REQUIRE(resume(fx.run("cut"), {}, null, stop_at(17)).status == TrainStatus::interrupted);
  clear_stop();
  REQUIRE(resume(fx.run("cut"), {}, null).status == TrainStatus::completed);
  CHECK(weights_of(fx.run("full") / "model.safetensors") ==
        weights_of(fx.run("cut") / "model.safetensors"));
}

TEST_CASE("resume: what is not a resumable run folder is refused with the reason") {
  TrainFixture fx;
  auto& null = fx.null;
  CHECK_THROWS_WITH_AS(resume(fx.run("nothing"), {}, null), doctest::Contains("no such folder"),
                       ConfigError);
  write_bytes(fx.run("other") / "notes.txt", "hello");
  CHECK_THROWS_WITH_AS(resume(fx.run("other"), {}, null),
                       doctest::Contains("has no train_config.json"), ConfigError);
  REQUIRE(train_new(fx.config("done"), null).status == TrainStatus::completed);
  CHECK_THROWS_WITH_AS(resume(fx.run("done"), {}, null), doctest::Contains("is a finished run"),
                       ConfigError);
}

TEST_CASE("resume: a train_config.json that lost a value of its recipe is refused naming it") {
  // A run saves its resolved recipe; one edited to "epochs": null (and no max_steps) had the
  // Trainer read the unset optional (found writing fuzz/targets.h's train_config, which now
  // runs train::total_steps).
  TrainFixture fx;
  auto& null = fx.null;
  TrainResult first = train_new(fx.config("cut"), null, [](int64_t step, double) {
    if (step == 3) request_stop();
  });
  REQUIRE(first.status == TrainStatus::interrupted);
  clear_stop();
  nlohmann::json j = read_json_file(fx.run("cut") / "train_config.json");
  j["epochs"] = nullptr;
  write_bytes(fx.run("cut") / "train_config.json", j.dump());
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, null), doctest::Contains("got epochs unset"),
                       ConfigError);
  // the file is named, and nothing was loaded first: a data folder that is not there is not
  // what the error is about
  const std::string file = (fx.run("cut") / "train_config.json").string();
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, null), doctest::Contains(file.c_str()),
                       ConfigError);
  j["data_dir"] = (fx.dir.path / "no-such-data").string();
  write_bytes(fx.run("cut") / "train_config.json", j.dump());
  CHECK_THROWS_WITH_AS(resume(fx.run("cut"), {}, null), doctest::Contains("got epochs unset"),
                       ConfigError);
}

TEST_CASE("run folder: checkpoints replace each other atomically") {
  mase::test::TempDir tmp;
  RunDir run = RunDir::create(tmp.path / "run");
  auto write_marker = [](const std::string& text) {
    return [text](const fs::path& dir) {
      mase::test::write_bytes(dir / RunDir::kState, text);
    };
  };
  run.save_checkpoint(5, write_marker("five"));
  CHECK(run.latest_checkpoint() == tmp.path / "run" / "checkpoints" / "step-000005");
  // a save that fails half-way leaves the previous checkpoint and no temporary behind
  CHECK_THROWS_AS(run.save_checkpoint(10,
                                      [](const fs::path& dir) {
                                        mase::test::write_bytes(dir / "model.safetensors", "x");
                                        throw IoError("disk full");
                                      }),
                  IoError);
  CHECK(mase::test::list_files(tmp.path / "run" / "checkpoints") ==
        std::vector<std::string>{"step-000005/trainer_state.json"});
  // the same step again replaces it; a newer one deletes the older
  run.save_checkpoint(5, write_marker("five again"));
  CHECK(mase::test::read_bytes(tmp.path / "run/checkpoints/step-000005/trainer_state.json") ==
        "five again");
  run.save_checkpoint(10, write_marker("ten"));
  CHECK(mase::test::list_files(tmp.path / "run" / "checkpoints") ==
        std::vector<std::string>{"step-000010/trainer_state.json"});
  // a folder without trainer_state.json (a crash inside a copy by hand) is never "latest"
  fs::create_directories(tmp.path / "run" / "checkpoints" / "step-000099");
  CHECK(run.latest_checkpoint() == tmp.path / "run" / "checkpoints" / "step-000010");
}

TEST_CASE("run folder: resuming drops the log lines written after the checkpoint") {
  mase::test::TempDir tmp;
  RunDir run = RunDir::create(tmp.path / "run");
  for (int s = 1; s <= 6; ++s) run.append_log(nlohmann::ordered_json{{"step", s}});
  for (int s : {2, 4, 6}) run.append_metrics({.step = s});
  run.truncate_after(4);
  CHECK(logged_steps(run.file(RunDir::kLog)) == std::vector<int64_t>{1, 2, 3, 4});
  std::string metrics = mase::test::read_bytes(run.file(RunDir::kMetrics));
  CHECK(metrics.find("\n2,") != std::string::npos);
  CHECK(metrics.find("\n4,") != std::string::npos);
  CHECK(metrics.find("\n6,") == std::string::npos);
  CHECK(metrics.rfind(kMetricsHeader, 0) == 0);
}
