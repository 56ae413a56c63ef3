// tests/search/test_lab_fronts.cpp — the architecture searches with two objectives
// (`mase-search tutorial | compress-aware --objectives accuracy,params`) and what is printed
// about fronts (search/lab_fronts.h). Oracles: a front and its hypervolume worked out by hand;
// the largest model of a space built directly (with another head count) and counted; the
// studies read back (directions, metric names, each trial's two values against its own
// attributes); the lines printed and the files written.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

#include "search/lab_commands.h"
#include "search/lab_fronts.h"
#include "search/lab_objectives.h"
#include "search/lab_spaces.h"
#include "search/study_test_util.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TrainFixture;
namespace fs = std::filesystem;

namespace {

// The fixture's data, 4 steps a trial, over L{1} A{2} H{8,16} I{16,32} x {linear, identity}.
void tiny_search(LabOptions& o, ArchChoices& arch, const TrainFixture& fx, const fs::path& dir) {
  o.base = fx.config("unused");
  o.base.epochs.reset();
  o.base.max_steps = 4;
  o.base.ckpt_every = 0;
  o.base.train_subset = 0;
  o.base.test_subset = 0;
  o.dir = dir.string();
  o.trials = 3;
  arch = {{1}, {2}, {8, 16}, {16, 32}};
}

const std::vector<Direction> kAccuracyParams = {Direction::maximize, Direction::minimize};

}  // namespace

TEST_CASE("lab fronts: value_text prints a whole number without an exponent") {
  CHECK(value_text(1234567) == "1234567");
  CHECK(value_text(32) == "32");
  CHECK(value_text(0.788) == "0.788");
  CHECK(value_text(15.690234375) == "15.6902");  // cat's 6 digits, as precision's fronts were
  CHECK(value_text(-3) == "-3");
}

TEST_CASE("lab fronts: the front and its hypervolume from a scaled reference, by hand") {
  TrainFixture fx;
  Space space;
  space.integer("x", 0, 9);
  Study study = Study::open((fx.dir.path / "h.db").string(), "h", space, kAccuracyParams,
                            make_sampler("random", 0), 0);
  const std::vector<std::vector<double>> told = {{0.8, 1e6}, {0.7, 5e5}, {0.6, 1.5e6}};
  for (const auto& values : told) {
    auto t = study.ask();
    REQUIRE(t);
    study.tell(t->number, TrialState::complete, values);
  }
  // From (0.5, 2e6), parameters in millions: trial 0 dominates [0.5, 0.8] x [1, 2] (0.3),
  // trial 1 adds [0.5, 0.7] x [0.5, 1] (0.1); trial 2 is dominated by trial 0.
  const FrontReference ref = parameters_reference(2000000);
  CHECK(front_hypervolume(study, ref) == doctest::Approx(0.4));
  const fs::path out = fx.dir.path / "out.txt";
  std::FILE* f = std::fopen(out.c_str(), "w");
  REQUIRE(f != nullptr);
  print_fronts({}, "", f);  // no study: nothing
  std::vector<Study> studies;
  studies.push_back(std::move(study));
  print_fronts(studies, " parameters", f, ref);
  std::fclose(f);
  CHECK(file_text(out) ==
        "front     h: hypervolume 0.4000 (accuracy x M parameters, from accuracy 0.5, 2000000 "
        "parameters: the space's largest model): trial 0 (0.8, 1000000 parameters), trial 1 "
        "(0.7, 500000 parameters)\n");
}

TEST_CASE("lab fronts: the largest model of a space, whatever its head count") {
  TrainFixture fx;
  train::TrainConfig base = fx.config("unused");
  const TrialData data = load_trial_data(base, fx.null);
  // the oracle: the model of the largest choices built as a trial builds it (2 heads)
  train::TrainConfig big = base;
  big.num_layers = 3;
  big.num_heads = 2;
  big.hidden_size = 24;
  big.intermediate_size = 40;
  const int64_t expected = new_model(big, *data.tokenizer)->num_parameters(true);
  const Space arch = architecture_space({1, 3, 2}, {2, 4}, {8, 24, 16}, {40, 16});
  CHECK(largest_model_parameters(tutorial_space(LinearChoice::shared, arch), base,
                                 *data.tokenizer) == expected);
  // integer parameters: their highest value on the step
  Space ints;
  ints.integer("num_layers", 1, 3).integer("hidden_size", 8, 24, 8).integer("intermediate_size", 16, 40, 24);
  CHECK(largest_model_parameters(ints, base, *data.tokenizer) == expected);
  // a parameter the space lacks: base's (the fixture's L1 H16 I32)
  Space layers_only;
  layers_only.categorical("num_layers", {"1", "3"});
  train::TrainConfig fixture3 = base;
  fixture3.num_layers = 3;
  CHECK(largest_model_parameters(layers_only, base, *data.tokenizer) ==
        new_model(fixture3, *data.tokenizer)->num_parameters(true));
}

TEST_CASE("tutorial --objectives accuracy,params: accuracy and parameters, fronts, Pareto figure") {
  TrainFixture fx;
  TutorialOptions o;
  tiny_search(o, o.arch, fx, fx.dir.path / "s");
  o.samplers = {"random", "nsga2"};  // the tool's default with two objectives
  o.params_objective = true;
  o.population = 2;
  o.plot = (fx.dir.path / "t.svg").string();
  const fs::path out = fx.dir.path / "out.txt";
  o.out = std::fopen(out.c_str(), "w");
  REQUIRE(o.out != nullptr);
  const LabResult res = run_tutorial(o);
  std::fclose(o.out);
  const std::string printed = file_text(out);
  CHECK(contains(printed, "study     tutorial-nsga2 (nsga2): sampler nsga2:2, 3 trials"));
  const std::string pareto = (fx.dir.path / "t-pareto.svg").string();
  CHECK(std::find(res.plots.begin(), res.plots.end(), pareto) != res.plots.end());
  CHECK(fs::file_size(pareto) > 0);
  CHECK(contains(printed, "pareto    " + pareto + "\n"));
  const TrialData data = load_trial_data(o.base, fx.null);
  train::TrainConfig big = o.base;  // the space's largest model: L1 H16 I32, Linears kept
  big.num_layers = 1, big.num_heads = 2, big.hidden_size = 16, big.intermediate_size = 32;
  const int64_t largest = new_model(big, *data.tokenizer)->num_parameters(true);
  for (const char* name : {"tutorial-random", "tutorial-nsga2"}) {
    INFO(name);
    Study study = Study::load(o.dir + "/studies.db", name);
    CHECK(study.directions() == kAccuracyParams);
    CHECK(study.metric_names() == std::vector<std::string>{"accuracy", "parameters"});
    int complete = 0;
    for (const TrialRecord& r : study.trials()) {
      REQUIRE(r.trial.state == TrialState::complete);
      ++complete;
      REQUIRE(r.trial.objectives.size() == 2);
      CHECK(r.trial.objectives[0] == std::stod(r.attrs.at("accuracy_trained")));
      CHECK(r.trial.objectives[1] == std::stod(r.attrs.at("parameters")));
      CHECK(r.trial.objectives[1] <= static_cast<double>(largest));
    }
    CHECK(complete == 3);
    char hv[32];
    std::snprintf(hv, sizeof hv, "%.4f", front_hypervolume(study, parameters_reference(largest)));
    CHECK(contains(printed, cat("front     ", name, ": hypervolume ", hv, " (accuracy x M "
                                "parameters, from accuracy 0.5, ", largest, " parameters: the "
                                "space's largest model): trial ")));
    CHECK(contains(file_text(o.dir + "/" + name + ".csv"),
                   "number,state,values_accuracy,values_parameters,"));
  }
  // the objectives are part of the objective key: one objective again is another study
  o.params_objective = false;
  o.samplers = {"random"};
  o.resume = true;
  o.out = std::fopen("/dev/null", "w");
  CHECK_THROWS_AS(run_tutorial(o), ConfigError);
  std::fclose(o.out);
}

TEST_CASE("architecture searches with two objectives refuse a pruner before writing") {
  TrainFixture fx;
  const fs::path dir = fx.dir.path / "refused";
  // `o` with two objectives and --pruner median --eval-every 2: the error of run(o)
  auto refusal = [&](auto o, auto run) {
    tiny_search(o, o.arch, fx, dir);
    o.params_objective = true;
    o.prune.pruner = "median";
    o.base.eval_every = 2;
    o.out = std::fopen("/dev/null", "w");
    const std::string error = error_of<ConfigError>([&] { run(o); });
    std::fclose(o.out);
    return error;
  };
  const std::string expected =
      "--objectives accuracy,params expected --pruner none, got --pruner median";
  TutorialOptions t;
  t.samplers = {"random"};
  CHECK(contains(refusal(t, run_tutorial), expected));
  CompressAwareOptions c;
  c.compress = nlohmann::json::parse(R"({"prune": {"weight": {"sparsity": 0.5}}})");
  c.sampler = "nsga2";
  CHECK(contains(refusal(c, run_compress_aware), expected));
  CHECK_FALSE(fs::exists(dir));
  // the trial itself: a pruner judges one value
  tiny_search(t, t.arch, fx, dir);
  auto data = std::make_shared<const TrialData>(load_trial_data(t.base, fx.null));
  Study s = Study::open((fx.dir.path / "p.db").string(), "p", Space().categorical("x", {"a"}),
                        Direction::maximize, make_sampler("random", 0), 0);
  CHECK_THROWS_AS(arch_trial_objective(tutorial_space(LinearChoice::none, architecture_space(
                                           {1}, {2}, {16}, {32})),
                                       t.base, data, {}, fx.dir.path / "q", fx.null,
                                       std::make_shared<const Pruning>(s, MedianPruner{}), true),
                  ConfigError);
}

TEST_CASE("compress-aware --objectives accuracy,params: the compressed accuracy, parameters") {
  TrainFixture fx;
  CompressAwareOptions o;
  tiny_search(o, o.arch, fx, fx.dir.path / "s");
  o.compress = nlohmann::json::parse(R"({"prune": {"weight": {"sparsity": 0.5}}})");
  o.variants = {"compressed"};
  o.sampler = "nsga2";  // the tool's default with two objectives
  o.params_objective = true;
  o.population = 2;
  o.trials = 2;
  o.out = std::fopen("/dev/null", "w");
  run_compress_aware(o);
  std::fclose(o.out);
  Study study = Study::load(o.dir + "/studies.db", "compress-aware-compressed");
  CHECK(study.directions() == kAccuracyParams);
  const std::vector<TrialRecord> trials = study.trials();
  REQUIRE(trials.size() == 2);
  for (const TrialRecord& r : trials) {
    REQUIRE(r.trial.objectives.size() == 2);
    CHECK(r.trial.objectives[0] == std::stod(r.attrs.at("accuracy_compressed")));
    // the architecture's parameters, pruned zeros included
    CHECK(r.trial.objectives[1] == std::stod(r.attrs.at("parameters")));
    CHECK(std::stod(r.attrs.at("weight_sparsity")) > 0.4);
  }
  CHECK(fs::exists(fx.dir.path / "s" / "compress-aware-pareto.svg"));
}
