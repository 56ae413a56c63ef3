// tests/search/test_custom_objectives.cpp — `mase-search custom --directions ...`: a study of
// several objectives over a shell command (search/lab_commands.h, run_custom). Oracles: the
// two quadratics x² and (x−2)² over x in 0..4, whose Pareto front (both minimized) is every
// trial with x ≤ 2, worked out by hand; the study read back; the lines printed.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/lab_commands.h"
#include "search/lab_runner.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;
namespace fs = std::filesystem;

namespace {
// `mase-search custom --directions minimize,minimize --space x=int:0:4 --command '...'`, its
// progress lines into <dir>/out.txt.
CustomOptions two_quadratics(const TempDir& dir) {
  CustomOptions o;
  o.space = "x=int:0:4";
  o.command = "echo $(({x}*{x})) $((({x}-2)*({x}-2)))";
  o.directions = {Direction::minimize, Direction::minimize};
  o.sampler = "nsga2";  // what the tool picks for several --directions
  o.population = 4;
  o.trials = 10;
  o.dir = (dir.path / "s").string();
  return o;
}


// run_custom(o) with its progress lines into <dir>/out.txt; returns them.
std::string run_printed(CustomOptions& o, const TempDir& dir) {
  const std::string out = dir.file("out.txt");
  o.out = std::fopen(out.c_str(), "w");
  REQUIRE(o.out != nullptr);
  run_custom(o);
  std::fclose(o.out);
  return file_text(out);
}
}  // namespace

TEST_CASE("custom objectives: two directions make a study of two; its front is printed") {
  TempDir dir;
  CustomOptions o = two_quadratics(dir);
  o.metric_names = {"square", "shifted"};
  const std::string printed = run_printed(o, dir);
  Study study = Study::load(o.dir + "/studies.db", "custom");
  CHECK(study.directions() == o.directions);
  CHECK(study.metric_names() == o.metric_names);
  std::string expected = "front     custom: ";
  size_t on_front = 0, complete = 0;
  for (const TrialRecord& r : study.trials()) {
    REQUIRE(r.trial.state == TrialState::complete);
    ++complete;
    const double x = r.trial.values.at("x");
    CHECK(r.trial.objectives == std::vector<double>{x * x, (x - 2) * (x - 2)});
    if (x > 2) continue;  // dominated by x = 1's (1, 1)
    char values[64];
    std::snprintf(values, sizeof values, "(%g, %g)", x * x, (x - 2) * (x - 2));
    expected += cat(on_front++ ? ", " : "", "trial ", r.trial.number, " ", values);
  }
  CHECK(complete == 10);
  REQUIRE(on_front > 0);
  CHECK(study.pareto_front().size() == on_front);
  CHECK(contains(printed, "study     custom (nsga2:4): sampler nsga2:4, 10 trials"));
  CHECK(contains(printed, expected + "\n"));
  // the CSV's columns are the metric names
  CHECK(contains(file_text(o.dir + "/custom.csv"), "number,state,values_square,values_shifted,x"));

  // another direction for an objective is another study: refused on --resume
  o.resume = true;
  o.trials = 12;
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  o.directions = {Direction::minimize, Direction::maximize};
  CHECK(contains(error_of<ConfigError>([&] { run_custom(o); }),
                 "was created with directions minimize, minimize, not minimize, maximize"));
  o.directions.clear();  // one objective now
  o.sampler = "random";
  o.metric_names.clear();
  CHECK(contains(error_of<ConfigError>([&] { run_custom(o); }),
                 "was created with directions minimize, minimize, not maximize"));
  std::fclose(o.out);
  CHECK(Study::load(o.dir + "/studies.db", "custom").trials().size() == 10);  // nothing ran
}

TEST_CASE("custom objectives: tpe takes several directions (Optuna 5.0's default for them)") {
  TempDir dir;
  CustomOptions o = two_quadratics(dir);
  o.sampler = "tpe";
  o.trials = 14;  // 10 random start-up trials, then 4 from the split by rank and hypervolume
  const std::string printed = run_printed(o, dir);
  Study study = Study::load(o.dir + "/studies.db", "custom");
  CHECK(study.directions() == o.directions);
  CHECK(study.trials().size() == 14);
  for (const TrialRecord& r : study.pareto_front()) CHECK(r.trial.values.at("x") <= 2);
  CHECK(contains(printed, "study     custom (tpe): sampler tpe, 14 trials"));
  CHECK(contains(printed, "front     custom: trial "));
}

TEST_CASE("custom objectives: a line with another count fails that trial, with its error") {
  TempDir dir;
  CustomOptions o = two_quadratics(dir);
  o.sampler = "random";
  o.trials = 4;
  // x = 0 prints one number: that trial fails, the others complete
  o.command = "if [ {x} = 0 ]; then echo 7; else echo {x} 1; fi";
  o.space = "x=int:0:1";
  o.seed = 3;
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  try {
    run_custom(o);
  } catch (const Error&) {  // three x = 0 in a row end the search: the trials are what counts
  }
  std::fclose(o.out);
  int failed = 0;
  for (const TrialRecord& r : Study::load(o.dir + "/studies.db", "custom").trials()) {
    if (r.trial.values.at("x") == 0) {
      ++failed;
      CHECK(r.trial.state == TrialState::failed);
      CHECK_FALSE(r.retryable);
      CHECK(contains(r.attrs.at("error"), "expected 2 numbers (one per objective, separated by "
                                          "spaces or commas) on the last line of the command's "
                                          "stdout, got 1 in '7'"));
    } else {
      CHECK(r.trial.state == TrialState::complete);
      CHECK(r.trial.objectives == std::vector<double>{1, 1});
    }
  }
  CHECK(failed > 0);
}

TEST_CASE("custom objectives: refusals come before anything is written") {
  TempDir dir;
  CustomOptions o = two_quadratics(dir);
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  o.minimize = true;
  CHECK(error_of<ConfigError>([&] { run_custom(o); }) ==
        "[search] --minimize and --directions both give the direction: expected one of the two, "
        "got both (--directions minimize is --minimize)");
  o.minimize = false;
  o.metric_names = {"only-one"};
  CHECK(error_of<ConfigError>([&] { run_custom(o); }) ==
        "[search] --metric-names expected 2 names (one per objective of --directions), got 1");
  o.metric_names = {"a", "a"};
  CHECK(contains(error_of<ConfigError>([&] { run_custom(o); }), "got 'a' twice"));
  std::fclose(o.out);
  CHECK_FALSE(fs::exists(o.dir));
}
