// tests/train/test_train_config.cpp — the trainer's small parts: TrainConfig (checks, JSON round
// trip, the recipe), balanced test subsets, progress formatting, parameter counts, --freeze.
#include <limits>

#include "helpers.h"
#include "models/bert.h"
#include "train/evaluate.h"
#include "train/progress.h"
#include "train/session.h"
#include "train/train_config.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;

TEST_CASE("train config: JSON round trip keeps every field") {
  TrainConfig c;
  c.model = "bert-tiny";
  c.pooling = "cls";
  c.dropout = 0.2;
  c.freeze = "embeddings";
  c.vocab_size = 8000;
  c.max_len = 128;
  c.train_subset = 1000;
  c.bucketing = false;
  c.pad_multiple = 16;
  c.lr = 3e-4;
  c.warmup = 100;
  c.schedule = "cosine";
  c.seed = 42;
  c.threads = 1;
  c.eval_every = 7;
  c.num_layers = 3;
  c.hidden_size = 96;
  nlohmann::json j = c.to_json();
  TrainConfig d = TrainConfig::from_json(j, "test");
  CHECK(d.to_json() == j);
  CHECK(d.num_layers == 3);
  CHECK(d.hidden_size == 96);
  CHECK(d.num_heads == 0);  // not given: the preset's
  CHECK(d.lr == 3e-4);
  CHECK(d.pooling == "cls");
  CHECK_FALSE(d.bucketing);
  CHECK(d.pad_multiple == 16);
  // a run folder written before pad_multiple existed reads as exact lengths (1)
  nlohmann::json old = TrainConfig{}.to_json();
  old.erase("pad_multiple");
  CHECK(TrainConfig::from_json(old, "test").pad_multiple == 1);
  // unset optionals are null and come back unset
  TrainConfig e = TrainConfig::from_json(TrainConfig{}.to_json(), "test");
  CHECK_FALSE(e.lr.has_value());
  CHECK(TrainConfig{}.to_json()["lr"].is_null());
}

TEST_CASE("train config: bad values and keys are ConfigErrors naming the flag") {
  auto bad = [](auto edit) {
    TrainConfig c;
    edit(c);
    return test::error_message([&] { c.validate(); });
  };
  CHECK(bad([](TrainConfig& c) { c.batch_size = 0; }) ==
        "[train] expected --batch-size >= 1, got 0");
  CHECK(bad([](TrainConfig& c) { c.lr = -1; }) == "[train] expected --lr > 0, got -1");
  CHECK(bad([](TrainConfig& c) { c.warmup = 2.5; }).find("--warmup") != std::string::npos);
  CHECK(bad([](TrainConfig& c) { c.pooling = "max"; }).find("--pooling cls or mean") !=
        std::string::npos);
  CHECK(bad([](TrainConfig& c) { c.device = "gpu"; }).find("cpu, cuda or cuda:N") !=
        std::string::npos);
  CHECK(bad([](TrainConfig& c) { c.model = "bert-nano"; }).find("bert-tiny") != std::string::npos);
  CHECK(bad([](TrainConfig& c) { c.dropout = 1.0; }).find("--dropout") != std::string::npos);
  CHECK(bad([](TrainConfig& c) { c.num_heads = -2; }) == "[train] expected --heads >= 0, got -2");
  CHECK(bad([](TrainConfig& c) { c.pad_multiple = 0; }) ==
        "[train] expected --pad-multiple >= 1, got 0");
  CHECK(bad([](TrainConfig& c) {
          c.init = "runs/x";
          c.num_layers = 2;
        }).find("keeps the architecture of its config.json") != std::string::npos);
  nlohmann::json j = TrainConfig{}.to_json();
  j["learning_rate"] = 1;
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j, "x.json"),
                       "[train] x.json: unknown key 'learning_rate' (written by another version of mase-train?)",
                       ConfigError);
  j = TrainConfig{}.to_json();
  j["epochs"] = "three";
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j, "x.json"), doctest::Contains("expected epochs to be an integer, got \"three\""),
                       ConfigError);
}

TEST_CASE("train config: the recipe fills what was not given") {
  TrainConfig c;
  c.model = "bert-tiny";
  TrainConfig r = resolve_recipe(c);
  CHECK(r.pooling == "cls");  // from scratch: HF's, so saved models predict the same in HF
  CHECK(r.lr == 1e-3);
  CHECK(r.dropout == 0.1);
  CHECK(r.warmup == 0.02);
  CHECK(r.epochs == 1);  // its test accuracy peaks after one epoch
  c.model = "bert-small";
  CHECK(resolve_recipe(c).lr == 2e-4);  // wider models need a smaller step
  CHECK(resolve_recipe(c).warmup == 0.06);  // and a longer ramp
  CHECK(resolve_recipe(c).epochs == 1);  // it too peaked after one epoch (s5)
  c.init = "some/hf/folder";
  TrainConfig f = resolve_recipe(c);
  CHECK_FALSE(f.pooling.has_value());  // the checkpoint's config.json decides
  CHECK_FALSE(f.dropout.has_value());
  CHECK(f.lr == 5e-5);
  CHECK(f.warmup == 0.1);
  c.lr = 0.01;  // given values are kept
  CHECK(resolve_recipe(c).lr == 0.01);
  // warm-up: a fraction of the steps, rounded, or a number of steps
  c.warmup = 0.1;
  CHECK(warmup_steps(c, 1000) == 100);
  c.warmup = 0.02;
  CHECK(warmup_steps(c, 782) == 16);  // 15.64 rounds to 16
  c.warmup = 50;
  CHECK(warmup_steps(c, 782) == 50);
}

TEST_CASE("train config: a warm-up of more steps than 2^53 is refused") {
  // found by fuzz/targets.h's train_config: a train_config.json with "warmup": 1e300 passed
  // validate() and warmup_steps cast it to int64 (undefined; the schedule then said
  // "expected warmup_steps >= 0, got -9223372036854775808")
  TrainConfig c = resolve_recipe(TrainConfig{});
  c.warmup = 1e300;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("--warmup to be a fraction < 1 or a whole "
                                                       "number of steps up to 2^53, got 1e+300"),
                       ConfigError);
  c.warmup = 0x1p53;
  CHECK_NOTHROW(c.validate());
  CHECK(warmup_steps(c, 10) == (int64_t{1} << 53));
}

TEST_CASE("train config: an integer outside its field's type is refused and not wrapped") {
  // found by fuzz/targets.h's train_config (every value must read back as written):
  // "threads": 4294967297 was read as 1, "max_steps": 18446744073709551615 as -1
  nlohmann::json j = TrainConfig{}.to_json();
  j["threads"] = 4294967297ull;
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j, "t.json"),
                       "[train] t.json: expected threads within [-2147483648, 2147483647], got "
                       "4294967297",
                       ConfigError);
  j["threads"] = -4294967297ll;
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j, "t.json"), doctest::Contains("got -4294967297"),
                       ConfigError);
  j = TrainConfig{}.to_json();
  j["max_steps"] = UINT64_MAX;
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j, "t.json"),
                       "[train] t.json: expected max_steps within [-9223372036854775808, "
                       "9223372036854775807], got 18446744073709551615",
                       ConfigError);
  j["max_steps"] = 5;
  j["threads"] = 1;
  j["seed"] = UINT64_MAX;  // the whole of uint64
  CHECK(TrainConfig::from_json(j, "t.json").max_steps == 5);
  CHECK(TrainConfig::from_json(j, "t.json").seed == UINT64_MAX);
}

TEST_CASE("train config: total_steps from max_steps or epochs and refusing an unresolved recipe") {
  TrainConfig c = resolve_recipe(TrainConfig{});
  CHECK(total_steps(c, 782) == 782);  // 1 epoch
  c.max_steps = 7;
  CHECK(total_steps(c, 782) == 7);
  c.max_steps = 0;
  c.epochs = int64_t{1} << 62;  // x 782 batches an epoch passes int64
  CHECK_THROWS_WITH_AS(total_steps(c, 782),
                       doctest::Contains("expected --epochs <= 11794593397512501 (x 782 batches "
                                         "an epoch within 64 bits), got 4611686018427387904"),
                       ConfigError);
  c.epochs.reset();
  CHECK_THROWS_WITH_AS(total_steps(c, 782), doctest::Contains("got epochs unset"), ConfigError);
  c.max_steps = 7;  // the Trainer checked lr and warmup only, and read epochs unset
  CHECK_THROWS_WITH_AS(total_steps(c, 782), doctest::Contains("got epochs unset"), ConfigError);
}

TEST_CASE("balanced_subset: half of each label, seeded, in the original order") {
  data::TokenizedSplit s;
  // labels 0 0 0 1 1 1 1 1; sequence i is {i} so the kept indices can be read back
  for (int32_t i = 0; i < 8; ++i) s.push_back(std::vector<int32_t>{i}, i < 3 ? 0 : 1);
  auto kept = [](const data::TokenizedSplit& t) {
    std::vector<int32_t> v;
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.sequence(i)[0]);
    return v;
  };
  data::TokenizedSplit a = balanced_subset(s, 4, 7);
  REQUIRE(a.size() == 4);
  CHECK(std::count(a.labels.begin(), a.labels.end(), 0) == 2);
  std::vector<int32_t> ka = kept(a);
  CHECK(std::is_sorted(ka.begin(), ka.end()));
  CHECK(kept(balanced_subset(s, 4, 7)) == ka);  // same seed, same subset
  // 5 odd: 2 negatives, 3 positives
  data::TokenizedSplit b = balanced_subset(s, 5, 7);
  CHECK(std::count(b.labels.begin(), b.labels.end(), 0) == 2);
  // 7: the 3 negatives are all there are, positives fill the rest (4)
  data::TokenizedSplit c = balanced_subset(s, 7, 7);
  CHECK(std::count(c.labels.begin(), c.labels.end(), 0) == 3);
  CHECK(std::count(c.labels.begin(), c.labels.end(), 1) == 4);
  CHECK(balanced_subset(s, 0, 7) == s);
  CHECK(balanced_subset(s, 100, 7) == s);
  // some seed picks another subset (over 2-of-3 x 2-of-5 = 30 choices)
  bool differs = false;
  for (uint64_t seed = 0; seed < 10; ++seed) differs |= kept(balanced_subset(s, 4, seed)) != ka;
  CHECK(differs);
}

TEST_CASE("progress: durations, rates and bars") {
  CHECK(format_duration(3725) == "1:02:05");  // 1 h + 2 min + 5 s
  CHECK(format_duration(59.6) == "0:01:00");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(NAN) == "?");
  CHECK(format_rate(7912) == "7.9k");
  CHECK(format_rate(1234567) == "1.2M");
  CHECK(format_rate(950) == "950");
  CHECK(format_bar(5, 10, 10) == "[#####.....]");
  CHECK(format_bar(0, 10, 4) == "[....]");
  CHECK(format_bar(10, 10, 4) == "[####]");
}

TEST_CASE("parameter counts: per part of BERT and in total") {
  nn::BertConfig mc;
  mc.vocab_size = 60;
  mc.hidden_size = 16;
  mc.num_hidden_layers = 1;
  mc.num_attention_heads = 2;
  mc.intermediate_size = 32;
  mc.max_position_embeddings = 64;
  auto m = std::make_shared<nn::BertForSequenceClassification>(mc);
  // embeddings: (60 + 64 + 2)·16 + LayerNorm 2·16 = 2,048
  // encoder: q, k, v, output 4·(16·16 + 16) = 1,088, LayerNorms 2·32 = 64,
  //          FFN 16·32 + 32 + 32·16 + 16 = 1,072: 2,224
  // pooler: 16·16 + 16 = 272; classifier: 16·2 + 2 = 34
  using P = std::pair<std::string, int64_t>;
  CHECK(parameter_counts(*m) == std::vector<P>{{"bert.embeddings", 2048},
                                               {"bert.encoder", 2224},
                                               {"bert.pooler", 272},
                                               {"classifier", 34},
                                               {"total", 4578}});
  CHECK(freeze_parameters(*m, "^bert\\.embeddings\\.") == 5);
  CHECK(parameter_counts(*m).front() == P{"bert.embeddings", 0});
  CHECK(parameter_counts(*m).back() == P{"total", 4578 - 2048});
  CHECK_THROWS_WITH_AS(freeze_parameters(*m, "decoder"), doctest::Contains("matches no parameter"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(freeze_parameters(*m, "(unclosed"), doctest::Contains("not a valid regex"),
                       ConfigError);
}

TEST_CASE("trainer: --max-steps at int64's end starts and stops without an overflow") {
  // The epoch count was (total + batches - 1) / batches: signed overflow for max_steps near
  // 2^63 (undefined; CI's UBSan stage runs this case). One step, then a stop request.
  test::TrainFixture fx;
  TrainConfig c = fx.config("huge");
  c.max_steps = std::numeric_limits<int64_t>::max();
  c.warmup = 0;
  const TrainResult r = train_new(c, fx.null, [](int64_t step, double) {
    if (step == 1) request_stop();
  });
  clear_stop();
  CHECK(r.status == TrainStatus::interrupted);
  CHECK(r.step == 1);
}
