// tests/search/test_command_pruning.cpp — `mase-search custom --pruner`: a command's
// "mase:report STEP VALUE" lines recorded and judged as they arrive, a pruned command ended
// (search/command_objective.h, search/shell_command.h). Oracles: the shell's own echo and
// sleep, the median rule worked by hand, and the wall clock (a pruned command that would sleep
// 30 s more must end within the grace period).
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/command_objective.h"

using namespace mase;
using namespace mase::search;

namespace test_command_pruning {

namespace {

struct PrunedStudy {
  test::TempDir dir;
  Space space = parse_space_spec("x=real:0:1");
  Study study = Study::open(dir.file("c.db"), "c", space, Direction::maximize,
                            make_sampler("random", 1), 1);
};

}  // namespace

TEST_CASE("report_line: 'mase:report STEP VALUE' and nothing else") {
  CHECK(report_line("mase:report 3 0.75") == std::make_pair(int64_t{3}, 0.75));
  CHECK(report_line("  mase:report 10 -1e-3") == std::make_pair(int64_t{10}, -1e-3));
  const auto nan = report_line("mase:report 2 nan");  // Optuna's report takes NaN
  REQUIRE(nan);
  CHECK(std::isnan(nan->second));
  CHECK_FALSE(report_line("0.75"));
  CHECK_FALSE(report_line("epoch 3: report mase:report 1 2"));  // the tag starts the line
  for (const char* bad : {"mase:report", "mase:report 3", "mase:report x 0.5",
                          "mase:report 3 0.5 extra", "mase:report -1 0.5", "mase:report 1.5 2"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(report_line(bad), doctest::Contains("expected 'mase:report STEP VALUE'"),
                         Error);
  }
}

TEST_CASE("custom with a pruner: reports stored, a trial below the median ended and pruned") {
  PrunedStudy fx;
  auto& s = fx.study;
  const auto pruning = std::make_shared<const Pruning>(s, MedianPruner{.n_startup_trials = 1});
  // trial 0 reports 0.5 and 0.6, then prints its value: complete, nothing to compare with
  Objective good = command_objective(
      fx.space, "echo 'mase:report 1 0.5'; echo 'mase:report 2 0.6'; echo 0.6", 1, pruning);
  auto t0 = s.ask();
  REQUIRE(t0);
  Outcome o = good(Params(fx.space, t0->values), t0->number);
  CHECK(o.state == TrialState::complete);
  CHECK(o.value == 0.6);
  s.tell(t0->number, o);
  // trial 1 reports 0.2 at step 1 (median of the completed there: 0.5), then would sleep 30 s:
  // pruned at once, its command sent SIGTERM
  Objective slow = command_objective(
      fx.space, "echo 'mase:report 1 0.2'; sleep 30; echo 'mase:report 2 0.9'; echo 0.9", 1,
      pruning);
  auto t1 = s.ask();
  REQUIRE(t1);
  const auto start = std::chrono::steady_clock::now();
  o = slow(Params(fx.space, t1->values), t1->number);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                          .count();
  CHECK(took < 10);  // not the 30 s sleep (SIGTERM ends sh and its sleep at once)
  CHECK(o.state == TrialState::pruned);
  CHECK(o.value == 0.2);
  CHECK(o.attrs.at("pruned_at_step") == "1");
  s.tell(t1->number, o);
  const std::vector<TrialRecord> trials = s.trials();
  CHECK(trials[0].intermediate == std::map<int64_t, double>{{1, 0.5}, {2, 0.6}});
  CHECK(trials[1].intermediate == std::map<int64_t, double>{{1, 0.2}});
  CHECK(trials[1].trial.state == TrialState::pruned);
}

TEST_CASE("custom with a pruner: a bad report fails the trial; PYTHONUNBUFFERED is set") {
  PrunedStudy fx;
  auto& s = fx.study;
  const auto pruning = std::make_shared<const Pruning>(s, MedianPruner{});
  auto t = s.ask();
  REQUIRE(t);
  Objective bad = command_objective(fx.space, "echo 'mase:report one 0.5'; echo 1", 1, pruning);
  CHECK_THROWS_WITH_AS(bad(Params(fx.space, t->values), t->number),
                       doctest::Contains("got 'mase:report one 0.5'"), Error);
  // a watched command's Python would otherwise write its reports only when it exits
  Objective env = command_objective(
      fx.space, "echo \"mase:report 1 $PYTHONUNBUFFERED\"; echo 1", 1, pruning);
  CHECK(env(Params(fx.space, t->values), t->number).value == 1);
  CHECK(s.trials()[0].intermediate.at(1) == 1);
  // a pruner judges one value: refused for a command of two objectives
  CHECK_THROWS_AS(command_objective(fx.space, "echo 1 2", 2, pruning), ConfigError);
}

TEST_CASE("custom with halving: rungs at the command's own steps (Optuna's min_resource 1)") {
  PrunedStudy fx;
  auto& s = fx.study;
  const auto cfg = pruner_from_flags({.pruner = "halving", .min_resource = 1,
                                      .reduction_factor = 2});
  REQUIRE(cfg);
  const auto pruning = std::make_shared<const Pruning>(s, *cfg);
  // trial 0 alone at each rung: passes 1, 2 and 4 with its last values
  Objective first = command_objective(
      fx.space, "for i in 1 2 3 4; do echo \"mase:report $i 0.$i\"; done; echo 0.4", 1, pruning);
  auto t0 = s.ask();
  REQUIRE(t0);
  s.tell(t0->number, first(Params(fx.space, t0->values), t0->number));
  // trial 1 reports 0.05 at step 1: below 0.1, the one value at rung 0: pruned there
  Objective worse = command_objective(fx.space, "echo 'mase:report 1 0.05'; sleep 30; echo 1", 1,
                                      pruning);
  auto t1 = s.ask();
  REQUIRE(t1);
  const Outcome o = worse(Params(fx.space, t1->values), t1->number);
  CHECK(o.state == TrialState::pruned);
  s.tell(t1->number, o);
  const std::vector<TrialRecord> trials = s.trials();
  CHECK(trials[0].rungs == std::map<int, double>{{0, 0.1}, {1, 0.2}, {2, 0.4}});
  CHECK(trials[1].rungs == std::map<int, double>{{0, 0.05}});
}

TEST_CASE("custom: 'mase:constraint NAME VALUE' lines become the trial's constraints") {
  CHECK(constraint_line("mase:constraint params 1200") == std::make_pair(std::string("params"),
                                                                         1200.0));
  CHECK(constraint_line("mase:constraint lat-ms -0.5") == std::make_pair(std::string("lat-ms"),
                                                                         -0.5));
  CHECK_FALSE(constraint_line("mase:constraints x 1"));  // another word
  CHECK_FALSE(constraint_line("0.5"));
  for (const char* bad : {"mase:constraint", "mase:constraint x", "mase:constraint x y",
                          "mase:constraint x 1 2", "mase:constraint x nan",
                          "mase:constraint a/b 1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(constraint_line(bad),
                         doctest::Contains("expected 'mase:constraint NAME VALUE'"), Error);
  }
  // without a pruner: constraints kept, reports checked and ignored, the last line the value
  const Space space = parse_space_spec("x=int:0:9");
  Objective f = command_objective(space,
                                  "echo 'mase:report 1 0.5'; echo 'mase:constraint size {x}'; "
                                  "echo 'mase:constraint ms -2'; echo 0.7");
  const Outcome o = f(Params(space, {{"x", 3}}), 0);
  CHECK(o.value == 0.7);
  CHECK(o.constraints == std::map<std::string, double>{{"ms", -2.0}, {"size", 3.0}});
  Objective bad = command_objective(space, "echo 'mase:constraint size big'; echo 1");
  CHECK_THROWS_WITH_AS(bad(Params(space, {{"x", 3}}), 1), doctest::Contains("got 'mase:constraint "
                                                                             "size big'"), Error);
}

}  // namespace test_command_pruning
