// tests/search/test_lab_objectives.cpp — the Lab 2.1/2.2/3 trials on the made-up IMDb of
// tests/train/trainer_fixture.h, and the studies' checks (objective key, --resume).
// Oracles: the trial's run folders (final.json, compression summary), mase-train's own
// --eval-only with the same quantize config (the PTQ accuracy must be the same number), the
// study's trials before and after a refused command.
#include <doctest/doctest.h>

#include <fstream>

#include "search/lab_objectives.h"
#include "search/lab_runner.h"
#include "search/lab_spaces.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::search;
using mase::test::read_json_file;
using mase::test::TrainFixture;
namespace fs = std::filesystem;

namespace {

Space fixture_arch() {
  Space s;
  s.categorical("num_layers", {"1"}).categorical("hidden_size", {"16"})
      .categorical("num_heads", {"2"}).categorical("intermediate_size", {"32"});
  return tutorial_space(LinearChoice::shared, s);
}

train::TrainConfig fixture_base(const TrainFixture& fx) {
  train::TrainConfig c = fx.config("unused");
  c.epochs.reset();
  c.max_steps = 6;
  c.ckpt_every = 0;
  return c;
}

// A trained bert of the fixture and the precision space over its Linears (integer 8/4), with
// the point that quantizes every one of them.
struct TrainedForPrecision {
  TrainFixture fx;
  LayerList layers;
  Space space;
  Values every_layer;
  TrainedForPrecision() {
    train::TrainConfig tc = fx.config("trained");
    tc.epochs = 1;
    REQUIRE(train::train_new(tc, fx.null).status == train::TrainStatus::completed);
    layers = linear_layer_list(fx.run("trained"));
    space = precision_space(layers.names, format_choices({"integer"}, {8}, {4}));
    for (const Param& p : space.params()) every_layer[p.name] = p.name.ends_with(":format");
  }
};

}  // namespace

TEST_CASE("compress-aware trial: train, compress, test, train again, each in the trial folder") {
  TrainFixture fx;
  train::TrainConfig base = fixture_base(fx);
  auto data = std::make_shared<const TrialData>(load_trial_data(base, fx.null));
  const Space space = fixture_arch();
  CompressStep step;
  step.config = nlohmann::json::parse(R"({"quantize": {"by": "type", "default": {"config": {
      "name": "integer", "data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8,
      "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4}}},
      "prune": {"weight": {"sparsity": 0.5}}})");
  step.post_steps = 3;
  Objective f = arch_trial_objective(space, base, data, step, fx.dir.path / "t", fx.null);
  Values v = {{"num_layers", 0}, {"hidden_size", 0}, {"num_heads", 0}, {"intermediate_size", 0},
              {"linear_layer", 1}};  // identity
  Outcome o = f(Params(space, v), 2);
  const fs::path run = fx.dir.path / "t" / "trial-0002";
  CHECK(o.attrs.at("identity_layers") == "5");  // Q K V, attention output, pooler (H 16, I 32)
  CHECK(std::stod(o.attrs.at("accuracy_trained")) ==
        read_json_file(run / "final.json")["test_accuracy"].get<double>());
  CHECK(o.attrs.count("accuracy_compressed") == 1);
  CHECK(std::stod(o.attrs.at("weight_sparsity")) == doctest::Approx(0.5).epsilon(0.02));
  auto post = read_json_file(run / "post" / "final.json");
  CHECK(o.value == post["test_accuracy"].get<double>());
  CHECK(post["steps"] == 3);
  CHECK(!post["compression"].is_null());  // the post-trained model is the compressed one
}

TEST_CASE("precision trial: PTQ accuracy is mase-train --eval-only's with the same config") {
  TrainFixture fx;
  train::TrainConfig tc = fx.config("trained");
  tc.epochs = 1;
  REQUIRE(train::train_new(tc, fx.null).status == train::TrainStatus::completed);

  const LayerList layers = linear_layer_list(fx.run("trained"));
  CHECK(layers.names.size() == 1 * 6 + 2);
  const Space space = precision_space(layers.names, format_choices({"integer"}, {8}, {4}));
  Values v;
  for (const Param& p : space.params()) v[p.name] = 1 - (p.name.find(":format") == std::string::npos);
  v["classifier:format"] = 0;  // every layer integer 8/4 but the classifier
  train::TrainConfig base = fixture_base(fx);
  auto data = std::make_shared<const TrialData>(load_trial_data(base, fx.null));
  Objective f = precision_trial_objective(space, layers, fx.run("trained"), base, data, 0,
                                          fx.dir.path / "p", fx.null);
  const Params params(space, v);
  Outcome o = f(params, 0);
  CHECK(o.attrs.at("quantized_layers") == "7");
  CHECK(std::stod(o.attrs.at("avg_weight_bits")) < 32);

  const fs::path cfg = fx.dir.path / "q.json";
  std::ofstream(cfg) << precision_quant_config(params, layers.names).dump();
  train::TrainConfig e = fx.config("");
  e.init = fx.run("trained").string();
  e.quant = cfg.string();
  e.out.clear();
  CHECK(o.value == train::eval_only(e, fx.null).accuracy);

  // with QAT: the trial trains its copy in trial-NNNN, the value is the accuracy after it
  Objective g = precision_trial_objective(space, layers, fx.run("trained"), base, data, 2,
                                          fx.dir.path / "p", fx.null);
  Outcome q = g(params, 1);
  CHECK(q.value == read_json_file(fx.dir.path / "p" / "trial-0001" / "final.json")["test_accuracy"]
                       .get<double>());
  CHECK(q.attrs.count("accuracy_ptq") == 1);
  // a trial is a function of its parameters and the seed, not of the trials before it in the
  // process: the same point again fine-tunes with the same dropout masks to the same loss
  Outcome again = g(params, 2);
  CHECK(again.attrs.at("test_loss") == q.attrs.at("test_loss"));
}

TEST_CASE("precision trial with a Wilcoxon pruner: test batches reported, stopped when worse") {
  // The study holds one completed trial that "scored" 2.0 on every test batch (set by hand: no
  // real trial can reach it), so every paired difference is negative and a trial is pruned at
  // the second batch (2 signs, both negative: p = 1/4 < 0.3); against a trial at -1.0 on every
  // batch it is never worse, tests every batch and gets the accuracy it gets unpruned.
  TrainedForPrecision trained;
  auto& [fx, layers, space, v] = trained;  // v: every Linear integer 8/4
  train::TrainConfig base = fixture_base(fx);
  auto data = std::make_shared<const TrialData>(load_trial_data(base, fx.null));
  base.eval_batch_size = std::max<int64_t>(1, data->test.size() / 4);  // 4 or 5 batches
  const int64_t batches = (data->test.size() + base.eval_batch_size - 1) / base.eval_batch_size;
  REQUIRE(batches >= 4);
  const Params params(space, v);
  const double unpruned = precision_trial_objective(space, layers, fx.run("trained"), base, data,
                                                    0, fx.dir.path / "u", fx.null)(params, 0)
                              .value;
  for (double bar : {2.0, -1.0}) {
    INFO("the completed trial's value on every batch: " << bar);
    Study study = Study::open((fx.dir.path / cat("w", bar, ".db")).string(), "w", space,
                              Direction::maximize, make_sampler("random", 0), 0);
    auto done = study.ask();
    REQUIRE(done);
    for (int64_t b = 0; b < batches; ++b) study.report(done->number, b, bar);
    study.tell(done->number, TrialState::complete, bar);
    auto pruning = std::make_shared<const Pruning>(study, WilcoxonPruner{.p_threshold = 0.3});
    Objective f = precision_trial_objective(space, layers, fx.run("trained"), base, data, 0,
                                            fx.dir.path / "p", fx.null, 0, false, pruning);
    auto t = study.ask();
    REQUIRE(t);
    const Outcome o = f(params, t->number);
    const TrialRecord r = study.trials().back();
    if (bar == 2.0) {
      CHECK(o.state == TrialState::pruned);
      CHECK(o.attrs.at("batches_tested") == "2");
      REQUIRE(r.intermediate.size() == 2);
      CHECK(o.value == r.intermediate.at(std::stoll(o.attrs.at("pruned_at_step"))));
      const double so_far = std::stod(o.attrs.at("accuracy_so_far"));
      CHECK(so_far >= 0);
      CHECK(so_far <= 1);
    } else {
      CHECK(o.state == TrialState::complete);
      CHECK(static_cast<int64_t>(r.intermediate.size()) == batches);  // every batch, once
      CHECK(o.value == unpruned);  // the shuffled order changes nothing but the order
    }
  }
  // it judges PTQ evaluations of one value only
  Study s = Study::open((fx.dir.path / "q.db").string(), "q", space, Direction::maximize,
                        make_sampler("random", 0), 0);
  CHECK_THROWS_AS(precision_trial_objective(space, layers, fx.run("trained"), base, data, 2,
                                            fx.dir.path / "q", fx.null, 0, false,
                                            std::make_shared<const Pruning>(s, WilcoxonPruner{})),
                  ConfigError);
}

TEST_CASE("precision trial with QAT and a curve pruner: PTQ at step 0, then QAT's tests") {
  // As the architecture trial's test below: one completed trial set by hand at `bar` on steps
  // 0, 2 and 4, a median pruner after it. At 2.0 (out of reach) the trial stops at its PTQ
  // report, before any QAT step; with --prune-warmup 1 at its first QAT test instead; at -1.0
  // it fine-tunes to the end, its curve the PTQ value and every test, less the bits penalty.
  TrainedForPrecision trained;
  auto& [fx, layers, space, v] = trained;  // v: every Linear integer 8/4
  const Params params(space, v);
  train::TrainConfig base = fixture_base(fx);
  base.eval_every = 2;  // QAT tests at steps 2 and 4, the final one at 6
  auto data = std::make_shared<const TrialData>(load_trial_data(base, fx.null));
  const double bits_weight = 0.5;
  struct Case {
    double bar;
    int64_t warmup;
    const char* stops;  // the step it is pruned at, or "" to complete
  };
  for (const Case k : {Case{2.0, 0, "0"}, Case{2.0, 1, "2"}, Case{-1.0, 0, ""}}) {
    INFO("the completed trial's value: " << k.bar << ", warm-up " << k.warmup);
    const fs::path db = fx.dir.path / cat("qat", k.bar, k.warmup, ".db");
    Study study = Study::open(db.string(), "q", space, Direction::maximize,
                              make_sampler("random", 0), 0);
    auto done = study.ask();
    REQUIRE(done);
    for (int64_t step : {0, 2, 4}) study.report(done->number, step, k.bar);
    study.tell(done->number, TrialState::complete, k.bar);
    MedianPruner mp;
    mp.n_startup_trials = 1;
    mp.n_warmup_steps = k.warmup;
    auto pruning = std::make_shared<const Pruning>(study, mp);
    const fs::path dir = fx.dir.path / cat("q", k.bar, k.warmup);
    Objective f = precision_trial_objective(space, layers, fx.run("trained"), base, data, 6, dir,
                                            fx.null, bits_weight, false, pruning);
    auto t = study.ask();
    REQUIRE(t);
    const Outcome o = f(params, t->number);
    const TrialRecord r = study.trials().back();
    const double penalty = bits_weight * std::stod(o.attrs.at("avg_weight_bits")) / 32;
    REQUIRE(r.intermediate.count(0) == 1);  // PTQ's accuracy, less the penalty, at step 0
    CHECK(r.intermediate.at(0) == doctest::Approx(std::stod(o.attrs.at("accuracy_ptq")) - penalty));
    const fs::path final_json = dir / cat("trial-000", t->number) / "final.json";
    if (*k.stops) {
      CHECK(o.state == TrialState::pruned);
      CHECK(o.attrs.at("pruned_at_step") == k.stops);
      CHECK(o.value == r.intermediate.at(std::stoll(k.stops)));  // the value it was judged on
      CHECK(r.intermediate.size() == (k.warmup == 0 ? 1u : 2u));
      CHECK_FALSE(fs::exists(final_json));  // QAT stopped there (or never started)
    } else {
      CHECK(o.state == TrialState::complete);
      CHECK(r.intermediate.size() == 4);  // 0 (PTQ), 2, 4, and the final test at 6
      const double qat = read_json_file(final_json)["test_accuracy"].get<double>();
      CHECK(std::stod(o.attrs.at("accuracy_qat")) == qat);
      CHECK(o.value == doctest::Approx(qat - penalty));
      CHECK(r.intermediate.at(6) == doctest::Approx(o.value));
    }
  }
  // the other kind of pruner, or a QAT schedule with nothing to judge, is refused up front
  Study s = Study::open((fx.dir.path / "r.db").string(), "r", space, Direction::maximize,
                        make_sampler("random", 0), 0);
  auto refused = [&](int64_t qat, int64_t every, PrunerConfig pruner) {
    train::TrainConfig b = base;
    b.eval_every = every;
    try {
      (void)precision_trial_objective(space, layers, fx.run("trained"), b, data, qat,
                                      fx.dir.path / "r", fx.null, 0, false,
                                      std::make_shared<const Pruning>(s, std::move(pruner)));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused(6, 2, WilcoxonPruner{}).find("expected a curve pruner") != std::string::npos);
  CHECK(refused(0, 0, MedianPruner{}).find("expected --pruner wilcoxon") != std::string::npos);
  CHECK(refused(6, 0, MedianPruner{}).find("--eval-every") != std::string::npos);
  CHECK(refused(6, 6, MedianPruner{}).find("--eval-every") != std::string::npos);
  CHECK(refused(6, 2, MedianPruner{}) == "accepted");
  CHECK_THROWS_WITH_AS(precision_trial_objective(space, layers, fx.run("trained"), base, data, 6,
                                                 fx.dir.path / "r", fx.null, 0, true,
                                                 std::make_shared<const Pruning>(s, MedianPruner{})),
                       doctest::Contains("expected one objective"), ConfigError);
}

TEST_CASE("lab studies: another objective, another space or no --resume leave the study as it was") {
  TrainFixture fx;
  LabRun run;
  run.db = (fx.dir.path / "s" / "studies.db").string();
  run.dir = (fx.dir.path / "s").string();
  run.trials = 2;
  run.out = fx.null;
  Space space;
  space.categorical("x", {"1", "2", "3"});
  LabStudy a{"a", "a", "grid", space, {{"max_steps", 100}}};
  {
    auto studies = open_lab_studies({a}, run);
    run_lab_study(studies[0], [](const Params& p, int64_t) {
      return Outcome{static_cast<double>(p.values().at("x")), {}};
    }, run);
  }
  auto count = [&] { return Study::load(run.db, "a").trials().size(); };
  REQUIRE(count() == 2);

  auto message = [&](const LabStudy& s, bool resume) {
    LabRun r = run;
    r.resume = resume;
    try {
      open_lab_studies({LabStudy{"b", "b", "grid", space, {}}, s}, r);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  LabStudy other = a;
  other.objective["max_steps"] = 200;
  CHECK(message(other, true).find("key 'max_steps' was 100, now 200") != std::string::npos);
  CHECK(message(a, false).find("add --resume") != std::string::npos);
  LabStudy wider = a;
  wider.space = Space().categorical("x", {"1", "2", "3", "4"});
  CHECK(message(wider, true).find("study 'a'") != std::string::npos);
  CHECK(count() == 2);
  // and the study listed first was not created either: every check comes before any write
  CHECK_THROWS_AS(Study::load(run.db, "b"), ConfigError);
  CHECK(message(a, true) == "no error");
}

TEST_CASE("architecture trial with a pruner: reports each evaluation, stops below the median") {
  // The study holds one completed trial that reached accuracy 1.0 at steps 2 and 4 (set by
  // hand: no real trial can beat it), so the median at every step is 1.0 and a trial whose
  // accuracy is below it is pruned at its first evaluation; with the bar at 0 it runs to the
  // end, every evaluation reported.
  TrainFixture fx;
  train::TrainConfig base = fixture_base(fx);
  base.eval_every = 2;  // evaluations at steps 2 and 4, then the final one at 6
  auto data = std::make_shared<const TrialData>(load_trial_data(base, fx.null));
  const Space space = fixture_arch();
  const Values v = {{"num_layers", 0}, {"hidden_size", 0}, {"num_heads", 0},
                    {"intermediate_size", 0}, {"linear_layer", 0}};
  for (double bar : {1.0, 0.0}) {
    INFO("the completed trial's accuracy at steps 2 and 4: " << bar);
    Study study = Study::open((fx.dir.path / cat("p", bar, ".db")).string(), "p", space,
                              Direction::maximize, make_sampler("random", 0), 0);
    auto done = study.ask();
    REQUIRE(done);
    study.report(done->number, 2, bar);
    study.report(done->number, 4, bar);
    study.tell(done->number, TrialState::complete, bar);
    MedianPruner mp;
    mp.n_startup_trials = 1;
    auto pruning = std::make_shared<const Pruning>(study, mp);
    Objective f = arch_trial_objective(space, base, data, {}, fx.dir.path / cat("t", bar), fx.null,
                                       pruning);
    auto t = study.ask();
    REQUIRE(t);
    const Outcome o = f(Params(space, v), t->number);
    const TrialRecord r = study.trials().back();
    if (bar == 1.0) {
      CHECK(o.state == TrialState::pruned);
      CHECK(o.attrs.at("pruned_at_step") == "2");
      REQUIRE(r.intermediate.size() == 1);
      CHECK(o.value == r.intermediate.at(2));  // its value: the accuracy it was judged on
      CHECK(o.value < 1.0);
      // the run stopped there: no final.json
      CHECK_FALSE(fs::exists(fx.dir.path / cat("t", bar) / cat("trial-000", t->number) / "final.json"));
    } else {
      CHECK(o.state == TrialState::complete);
      CHECK(o.attrs.count("pruned_at_step") == 0);
      // steps 2 and 4 were judged; the final evaluation (step 6) is recorded after training,
      // never judged, so the trial's curve reaches its value
      CHECK(r.intermediate.size() == 3);
      CHECK(r.intermediate.count(2) == 1);
      CHECK(r.intermediate.count(4) == 1);
      CHECK(r.intermediate.at(6) == o.value);
    }
  }
  // a pruner without evaluations to judge is refused up front
  train::TrainConfig no_eval = base;
  no_eval.eval_every = 0;
  Study s = Study::open((fx.dir.path / "q.db").string(), "q", space, Direction::maximize,
                        make_sampler("random", 0), 0);
  CHECK_THROWS_AS(arch_trial_objective(space, no_eval, data, {}, fx.dir.path / "q", fx.null,
                                       std::make_shared<const Pruning>(s, MedianPruner{})),
                  ConfigError);
}
