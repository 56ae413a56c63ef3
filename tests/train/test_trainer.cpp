// tests/train/test_trainer.cpp — mase-train's pipeline end to end on a made-up IMDb
// (trainer_fixture.h): learning, determinism, the run folder, --eval-only, predict, NaN stop.
// Resume and Ctrl-C are in test_trainer_resume.cpp; configs and helpers in test_train_config.cpp.
#include <cmath>
#include <set>
#include <sstream>

#include "data/wordpiece.h"
#include "helpers.h"
#include "models/checkpoint.h"
#include "models/safetensors.h"
#include "runtime/parallel.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::read_json_file;
using mase::test::TrainFixture;
using mase::test::weights_of;
using mase::test::write_bytes;

namespace {

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("trainer: a tiny BERT learns the made-up reviews and the loss decreases") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("run");
  c.epochs = 8;
  TrainResult r = train_new(c, null);
  REQUIRE(r.status == TrainStatus::completed);
  REQUIRE(r.losses.size() == 96);  // 8 epochs of 96 reviews / 8
  // ln 2 = 0.693 is the loss of a coin flip: the first epoch starts there, the last is far below
  // (measured: 0.01; the loss sits near ln 2 for a few epochs, then drops)
  double first = 0, last = 0;
  for (int i = 0; i < 12; ++i) first += r.losses[i] / 12;
  for (int i = 84; i < 96; ++i) last += r.losses[i] / 12;
  CHECK(std::abs(r.losses[0] - std::log(2.0)) < 0.1);
  CHECK(last < 0.2 * first);
  // and it generalises to the 32 test reviews (words drawn from the same distribution)
  CHECK(r.eval.examples == 32);
  CHECK(r.eval.accuracy >= 0.9);
}

TEST_CASE("trainer: the same seed and threads give the same loss sequence and weights") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainResult a = train_new(fx.config("a"), null);
  TrainResult b = train_new(fx.config("b"), null);
  REQUIRE(a.losses.size() == 24);
  CHECK(a.losses == b.losses);  // bit for bit
  CHECK(weights_of(fx.run("a") / "model.safetensors") ==
        weights_of(fx.run("b") / "model.safetensors"));
  // and another seed gives another run (the test above could not fail otherwise)
  TrainConfig c = fx.config("c");
  c.seed = 1;
  TrainResult other = train_new(c, null);
  CHECK(other.losses != a.losses);
}

TEST_CASE("trainer: the run folder holds the log, the metrics, the model and final.json") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("run");
  c.log_every = 5;
  c.eval_every = 10;
  TrainResult r = train_new(c, null);
  REQUIRE(r.status == TrainStatus::completed);
  const fs::path run = fx.run("run");

  // train_log.jsonl: steps 5, 10, 15, 20 and the last (24), each with its numbers
  std::vector<std::string> log = lines_of(run / "train_log.jsonl");
  REQUIRE(log.size() == 5);
  std::vector<int64_t> steps;
  for (const auto& l : log) {
    auto j = nlohmann::json::parse(l);
    for (const char* k : {"step", "epoch", "loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s"})
      CHECK(j.contains(k));
    steps.push_back(j["step"].get<int64_t>());
  }
  CHECK(steps == std::vector<int64_t>{5, 10, 15, 20, 24});
  // the logged loss of steps 1..5 is their mean
  double mean5 = 0;
  for (int i = 0; i < 5; ++i) mean5 += r.losses[i] / 5;
  CHECK(nlohmann::json::parse(log[0])["loss"].get<double>() == doctest::Approx(mean5).epsilon(1e-12));

  // metrics.csv: the header, then evaluations at step 10 (--eval-every), 12 (epoch 1 end),
  // 20 (--eval-every) and 24 (epoch 2 end)
  std::vector<std::string> metrics = lines_of(run / "metrics.csv");
  REQUIRE(metrics.size() == 5);
  CHECK(metrics[0] == "step,epoch,train_loss,test_loss,test_accuracy,test_examples,lr,elapsed_s");
  std::vector<int64_t> eval_steps;
  for (size_t i = 1; i < metrics.size(); ++i) eval_steps.push_back(std::stoll(metrics[i]));
  CHECK(eval_steps == std::vector<int64_t>{10, 12, 20, 24});

  // final.json: the results and the whole config
  auto fin = read_json_file(run / "final.json");
  for (const char* k : {"test_accuracy", "test_loss", "train_tokens_per_s", "wall_s", "steps",
                        "parameters", "trainable_parameters", "config", "model_config"})
    CHECK(fin.contains(k));
  CHECK(fin["test_accuracy"].get<double>() == r.eval.accuracy);
  CHECK(fin["steps"].get<int64_t>() == 24);
  CHECK(fin["config"]["lr"].get<double>() == 1e-2);
  CHECK(fin["config"]["pooling"].get<std::string>() == "cls");  // resolved by the recipe: HF's
  CHECK(!read_json_file(run / "config.json").contains("pooling_note"));
  CHECK(fin["train_tokens_per_s"].get<double>() > 0);
  // the last metrics row is the final evaluation
  CHECK(metrics.back().rfind("24,2.0000,", 0) == 0);

  // a finished run folder is a model folder; the tokenizer and the config are beside it
  CHECK(fs::exists(run / "vocab.txt"));
  CHECK(TrainConfig::from_json(read_json_file(run / "train_config.json"), "t").lr == 1e-2);
  auto model = nn::from_pretrained(run.string());
  CHECK(model->config().hidden_size == 16);
  // one checkpoint is kept, the newest: --ckpt-every 5 wrote 5, 10, 12 (epoch end), 15, 20;
  // step 24 ends the run with the final model instead
  std::vector<std::string> ckpts;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    ckpts.push_back(e.path().filename().string());
  CHECK(ckpts == std::vector<std::string>{"step-000020"});
}

TEST_CASE("trainer: --eval-only on the run folder equals the evaluation at the end of training") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainResult r = train_new(fx.config("run"), null);
  REQUIRE(r.status == TrainStatus::completed);
  TrainConfig e = fx.config("unused");
  e.init = fx.run("run").string();
  e.vocab = "";      // the run's own vocab.txt
  e.max_len = 0;     // the run's own max_len
  EvalResult ev = eval_only(e, null);
  auto fin = read_json_file(fx.run("run") / "final.json");
  CHECK(ev.examples == 32);
  CHECK(ev.accuracy == fin["test_accuracy"].get<double>());
  CHECK(ev.loss == fin["test_loss"].get<double>());  // same weights, batches, threads: bitwise
  CHECK_FALSE(fs::exists(fx.run("unused")));         // evaluation writes nothing
}

TEST_CASE("trainer: predict gives the probability that evaluate's loss implies") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("run");
  c.epochs = 8;
  REQUIRE(train_new(c, null).status == TrainStatus::completed);
  LoadedModel lm = load_model_dir(fx.run("run"));
  CHECK(lm.max_len == 32);
  Prediction pos = predict(*lm.model, *lm.tokenizer, "I loved this film, a wonderful story.", lm.max_len);
  Prediction neg = predict(*lm.model, *lm.tokenizer, "A boring plot and awful acting.", lm.max_len);
  CHECK(pos.label == 1);
  CHECK(neg.label == 0);
  CHECK(pos.probs[0] + pos.probs[1] == doctest::Approx(1.0));
  // Independent path: a one-review split through the Batcher and cross_entropy. Its loss is
  // −log p(label), so exp(−loss) must be predict's probability of that label.
  data::TokenizedSplit one;
  std::vector<int32_t> ids = lm.tokenizer->encode("A boring plot and awful acting.");
  one.push_back(ids, 0);
  EvalResult ev = evaluate(*lm.model, one, {});
  CHECK(std::exp(-ev.loss) == doctest::Approx(neg.probs[0]).epsilon(1e-5));
  CHECK(ev.accuracy == 1.0);
}

// Library calls with values the CLI never passes: a ConfigError, not a SIGFPE (evaluate divided
// by the batch size before the Batcher checked it) or a write before an empty vector (predict
// with max_len 0 resized the ids to nothing, then set their last one to [SEP]).
TEST_CASE("trainer: evaluate and predict refuse a batch size or max_len they cannot use") {
  TrainFixture fx;
  auto tok = data::WordPiece::load(fx.vocab);
  nn::BertForSequenceClassification model(nn::load_config(fx.model_config.string()));
  data::TokenizedSplit one;
  one.push_back(tok->encode("a great film."), 1);
  EvalOptions eo;
  eo.batch_size = 0;
  CHECK_THROWS_WITH_AS(evaluate(model, one, eo), "[evaluate] expected batch_size >= 1, got 0",
                       ConfigError);
  eo.batch_size = 1;
  CHECK(evaluate(model, one, eo).examples == 1);
  for (int64_t max_len : {0, 1})
    CHECK_THROWS_WITH_AS(predict(model, *tok, "a great film.", max_len),
                         doctest::Contains("[predict] expected max_len >= 2"), ConfigError);
  CHECK(predict(model, *tok, "a great film.", 2).tokens == 2);  // [CLS] [SEP]
}

TEST_CASE("trainer: a NaN loss stops the run with the step and a hint and keeps the checkpoint") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("run");
  c.lr = 1e30;
  c.warmup = 0;
  c.ckpt_every = 1;
  TrainResult r = train_new(c, null);
  REQUIRE(r.status == TrainStatus::diverged);
  INFO(r.message);
  CHECK(r.message.find(cat("at step ", r.step + 1)) != std::string::npos);
  CHECK(r.message.find("lower --lr") != std::string::npos);
  CHECK(r.step >= 1);
  // nothing after the last good step: no final model, no final.json, the checkpoint of that step
  const fs::path run = fx.run("run");
  CHECK_FALSE(fs::exists(run / "final.json"));
  CHECK_FALSE(fs::exists(run / "model.safetensors"));
  char name[32];
  std::snprintf(name, sizeof name, "step-%06lld", static_cast<long long>(r.step));
  CHECK(r.checkpoint.filename() == name);
  CHECK(fs::exists(r.checkpoint / "trainer_state.json"));
  // that checkpoint holds the weights that gave the NaN (step N's loss uses step N − 1's
  // weights): the message must not call it good; a NaN prints as nan, never -nan
  CHECK(r.message.find("holds the weights that gave it") != std::string::npos);
  CHECK(r.message.find("last good checkpoint") == std::string::npos);
  CHECK(r.message.find("-nan") == std::string::npos);
  // --init of a checkpoint folder brings its run's tokenizer (the checkpoint holds none)
  CHECK_FALSE(find_tokenizer_file(run).empty());
  CHECK(find_tokenizer_file(r.checkpoint) == find_tokenizer_file(run));
  CHECK(find_tokenizer_file(r.checkpoint.string() + "/") == find_tokenizer_file(run));
}

TEST_CASE("trainer: --freeze keeps the matching parameters exactly as initialised") {
  TrainFixture fx;
  auto& null = fx.null;
  TrainConfig c = fx.config("run");
  c.freeze = "embeddings";
  REQUIRE(train_new(c, null).status == TrainStatus::completed);
  // the same seed builds the same initial model: compare the frozen tensors with it
  manual_seed(c.seed);
  nn::BertConfig mc = nn::load_config(fx.model_config.string());
  mc.pooling = "mean";
  nn::BertForSequenceClassification init(mc);
  auto trained = nn::from_pretrained(fx.run("run").string())->state_dict();
  int frozen = 0, changed = 0;
  for (const auto& [name, t] : init.state_dict()) {
    const bool same = t.to_vector<float>() == trained.at(name).to_vector<float>();
    if (name.find("embeddings") != std::string::npos) {
      CHECK(same);
      ++frozen;
    } else {
      changed += !same;
    }
  }
  CHECK(frozen == 5);    // word, position, token_type, LayerNorm weight and bias
  CHECK(changed > 10);   // the rest trained
  // and the optimizer state in the checkpoint has nothing for them
  auto opt = nn::load_safetensors(
      (fx.run("run") / "checkpoints" / "step-000020" / "optimizer.safetensors").string());
  for (const auto& [key, t] : opt.tensors) CHECK(key.find("embeddings") == std::string::npos);
}

TEST_CASE("trainer: bad input is refused before anything is written") {
  TrainFixture fx;
  auto& null = fx.null;
  SUBCASE("a non-empty --out") {
    write_bytes(fx.run("used") / "keep.txt", "precious");
    CHECK_THROWS_WITH_AS(train_new(fx.config("used"), null),
                         doctest::Contains("is not empty"), ConfigError);
    CHECK(mase::test::list_files(fx.run("used")) == std::vector<std::string>{"keep.txt"});
  }
  SUBCASE("a config.json whose vocab_size is not the tokenizer's") {
    TrainConfig c = fx.config("run");
    write_bytes(fx.dir.path / "big.json", cat("{\"vocab_size\": ", fx.vocab_size + 1,
                                              ", \"hidden_size\": 16, \"num_hidden_layers\": 1,"
                                              " \"num_attention_heads\": 2}"));
    c.model = (fx.dir.path / "big.json").string();
    CHECK_THROWS_WITH_AS(train_new(c, null), doctest::Contains("vocab_size"), ConfigError);
    CHECK_FALSE(fs::exists(fx.run("run")));
  }
  SUBCASE("an --init folder with an unsupported config") {
    write_bytes(fx.dir.path / "hf" / "config.json",
                "{\"model_type\": \"bert\", \"position_embedding_type\": \"relative_key\"}");
    write_bytes(fx.dir.path / "hf" / "model.safetensors", "");
    TrainConfig c = fx.config("run");
    c.init = (fx.dir.path / "hf").string();
    CHECK_THROWS_WITH_AS(train_new(c, null), doctest::Contains("position_embedding_type"),
                         ConfigError);
    CHECK_FALSE(fs::exists(fx.run("run")));
  }
  SUBCASE("an --init folder with a truncated model.safetensors") {
    write_bytes(fx.dir.path / "hf" / "config.json",
                cat("{\"vocab_size\": ", fx.vocab_size, ", \"hidden_size\": 16, ",
                    "\"num_hidden_layers\": 1, \"num_attention_heads\": 2}"));
    write_bytes(fx.dir.path / "hf" / "model.safetensors", std::string("\x40\0\0\0\0\0\0\0{", 9));
    TrainConfig c = fx.config("run");
    c.init = (fx.dir.path / "hf").string();
    CHECK_THROWS_AS(train_new(c, null), IoError);
    CHECK_FALSE(fs::exists(fx.run("run")));
  }
  SUBCASE("--device cuda without a GPU") {
    if (test::gpu_present()) return;  // a GPU is here: the error cannot be provoked
    TrainConfig c = fx.config("run");
    c.device = "cuda";
    CHECK_THROWS_AS(train_new(c, null), DeviceError);
    CHECK_FALSE(fs::exists(fx.run("run")));
  }
  SUBCASE("an unknown model") {
    TrainConfig c = fx.config("run");
    c.model = "bert-nano";
    CHECK_THROWS_WITH_AS(train_new(c, null), doctest::Contains("bert-tiny"), ConfigError);
  }
}

TEST_CASE("trainer: --init starts from an HF folder or a run folder with their tokenizer") {
  TrainFixture fx;
  auto& null = fx.null;
  // HF: the fixture that transformers' save_pretrained wrote (L2 H32, vocab 100, dropout 0),
  // plus a vocab.txt of 100 entries: the fixture's words, then fillers
  const fs::path hf = fx.dir.path / "hf";
  fs::create_directories(hf);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(fs::path(MASE_FIXTURES_DIR) / "hf_bert_tiny" / f, hf / f);
  std::string vocab = mase::test::read_bytes(fx.vocab);
  for (int64_t i = fx.vocab_size; i < 100; ++i) vocab += cat("[unused", i, "]\n");
  write_bytes(hf / "vocab.txt", vocab);

  TrainConfig c = fx.config("from-hf");
  c.init = hf.string();
  c.vocab = "";  // the folder's vocab.txt
  c.max_len = 16;  // the fixture's max_position_embeddings
  c.max_steps = 1;
  c.lr = 1e-12;  // one step that cannot move the weights measurably
  c.warmup = 0;
  REQUIRE(train_new(c, null).status == TrainStatus::completed);
  auto before = weights_of(hf / "model.safetensors");
  auto after = weights_of(fx.run("from-hf") / "model.safetensors");
  for (const auto& [name, v] : after) {
    INFO(name);
    REQUIRE(before.count(name));
    test::check_close(Tensor::from(v, {static_cast<int64_t>(v.size())}),
                      std::vector<double>(before[name].begin(), before[name].end()), 1e-7, 1e-6);
  }
  auto fin = read_json_file(fx.run("from-hf") / "final.json");
  CHECK(fin["model_config"]["pooling"] == "cls");                // HF's, kept
  CHECK(fin["model_config"]["hidden_dropout_prob"] == 0.0);       // the checkpoint's, kept
  CHECK(fin["config"]["lr"] == 1e-12);
  CHECK(mase::test::read_bytes(fx.run("from-hf") / "vocab.txt") == vocab);

  // our run folder: a mean-pooled model stays mean-pooled, and its config.json says HF differs
  TrainConfig a = fx.config("first");
  a.pooling = "mean";
  REQUIRE(train_new(a, null).status == TrainStatus::completed);
  CHECK(read_json_file(fx.run("first") / "config.json").contains("pooling_note"));
  TrainConfig b = fx.config("second");
  b.init = fx.run("first").string();
  b.vocab = "";
  b.max_steps = 2;
  REQUIRE(train_new(b, null).status == TrainStatus::completed);
  CHECK(read_json_file(fx.run("second") / "final.json")["model_config"]["pooling"] == "mean");
}
