// tests/search/test_more_pruners.cpp — the threshold, patient, Wilcoxon and percentile pruners
// (search/curve_pruners.h, search/wilcoxon.h, search/pruner.h) and their flags. Oracles: hand
// arithmetic (signed-rank distributions counted by hand, curves judged by hand), SciPy 1.17's
// wilcoxon on 400 samples of every kind it treats apart, and Optuna 5.0 itself — 490 whole
// studies, every one of their 32,987 decisions (tests/fixtures/search/more_pruners.json, made
// by make_more_pruners_fixture.py), replayed in memory through `judge` and, for some, through a
// real study file and Pruning::report.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/pruner.h"
#include "search/pruner_replay.h"

using namespace mase;
using namespace mase::search;
using nlohmann::json;
using namespace mase::search::test_util;

namespace test_more_pruners {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TrialRecord trial(int64_t number, TrialState state, std::map<int64_t, double> intermediate,
                  double value = 0) {
  TrialRecord r;
  r.trial.number = number;
  r.trial.state = state;
  r.trial.value = value;
  r.intermediate = std::move(intermediate);
  return r;
}

json fixture() {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/more_pruners.json");
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("signed_rank_p: exact null distributions counted by hand") {
  // n = 3, no ties: the 8 sign patterns give W+ = 0,1,2,3,3,4,5,6 — one in 8 reaches 6
  CHECK(signed_rank_p({1, 2, 3}, Alternative::greater) == doctest::Approx(1.0 / 8));
  CHECK(signed_rank_p({1, 2, 3}, Alternative::less) == doctest::Approx(1.0));
  CHECK(signed_rank_p({-1, -2, -3}, Alternative::less) == doctest::Approx(1.0 / 8));
  // W+ = 3 (ranks 1 and 2 positive, or rank 3): P(W+ <= 3) = 5/8, P(W+ >= 3) = 5/8
  CHECK(signed_rank_p({0.5, -3, 1}, Alternative::less) == doctest::Approx(5.0 / 8));
  CHECK(signed_rank_p({0.5, -3, 1}, Alternative::greater) == doctest::Approx(5.0 / 8));
  // a zero: the 4 sign flips of (0, 1) give W+ = 2.5, 0.5, 2.5, 0.5 (zero's rank 1 split)
  CHECK(signed_rank_p({0, 1}, Alternative::greater) == doctest::Approx(0.5));
  CHECK(signed_rank_p({0, 1}, Alternative::less) == doctest::Approx(1.0));
  CHECK_THROWS_AS(signed_rank_p({1}, Alternative::less), ConfigError);
  CHECK_THROWS_AS(signed_rank_p({1, std::nan("")}, Alternative::less), ConfigError);
}

TEST_CASE("signed_rank_p equals SciPy's wilcoxon(zero_method='zsplit') (fixture)") {
  const json fx = fixture();
  MESSAGE("fixture from scipy " << fx["scipy"].get<std::string>());
  int compared = 0;
  for (const json& c : fx["signed_rank"]) {
    const auto d = c["d"].get<std::vector<double>>();
    for (const auto& [name, alt] : {std::pair{"less", Alternative::less},
                                    std::pair{"greater", Alternative::greater}}) {
      const double want = number_of(c[name]);
      const double got = signed_rank_p(d, alt);
      INFO("n " << d.size() << ", " << name << ", sample " << c["d"].dump());
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == doctest::Approx(want).epsilon(1e-9));
      }
      ++compared;
    }
  }
  CHECK(compared == 800);
}

TEST_CASE("threshold pruner: outside the bounds or NaN, after warm-up, first in each interval") {
  const ThresholdPruner p{.lower = 0.5};
  CHECK_FALSE(should_prune(p, {}));
  CHECK_FALSE(should_prune(p, {{1, 0.6}}));
  CHECK(should_prune(p, {{1, 0.6}, {2, 0.4}}));  // the latest value, not the best
  CHECK(should_prune(p, {{1, kNaN}}));
  CHECK_FALSE(should_prune(p, {{1, kInf}}));     // no upper bound
  const ThresholdPruner warm{.upper = 1.0, .n_warmup_steps = 5, .interval_steps = 3};
  CHECK_FALSE(should_prune(warm, {{4, 2.0}}));   // still warming up
  CHECK(should_prune(warm, {{5, 2.0}}));         // step 5 opens the interval [5, 8)
  CHECK_FALSE(should_prune(warm, {{5, 0.5}, {6, 2.0}}));  // 6 is not its interval's first
  CHECK(should_prune(warm, {{5, 0.5}, {8, 2.0}}));
  CHECK_THROWS_AS(ThresholdPruner{}.validate(), ConfigError);  // neither bound
  CHECK_THROWS_AS((ThresholdPruner{.lower = 1, .upper = 0}.validate()), ConfigError);
}

TEST_CASE("patience: the last patience + 1 reports against the best before them") {
  const auto max = Direction::maximize;
  CHECK_FALSE(patience_ran_out(1, 0, {{1, 0.5}, {2, 0.4}}, max));  // 2 reports: too few
  CHECK_FALSE(patience_ran_out(1, 0, {{1, 0.5}, {2, 0.6}, {3, 0.55}}, max));  // 0.6 beat 0.5
  CHECK(patience_ran_out(1, 0, {{1, 0.6}, {2, 0.5}, {3, 0.55}}, max));        // 0.55 < 0.6
  CHECK_FALSE(patience_ran_out(1, 0, {{1, 0.6}, {2, 0.5}, {3, 0.6}}, max));  // equal: kept
  CHECK_FALSE(patience_ran_out(1, 0.1, {{1, 0.6}, {2, 0.5}, {3, 0.55}}, max));  // 0.5 < 0.55
  CHECK(patience_ran_out(1, 0, {{1, 0.4}, {2, 0.5}, {3, 0.45}}, Direction::minimize));
  CHECK_FALSE(patience_ran_out(1, 0, {{1, kNaN}, {2, 0.5}, {3, 0.45}}, max));  // NaN side: keep
  CHECK(patience_ran_out(0, 0, {{1, 0.6}, {2, 0.5}}, max));  // patience 0: the last report
}

TEST_CASE("percentile pruner: the p-th best of the completed trials at the same step") {
  // completed trials at step 10: 0.2, 0.4, 0.6, 0.8 (maximizing). The 25th percentile from
  // the top is numpy's nanpercentile at 75: rank 0.75 · 3 = 2.25, 0.6 + 0.25 · 0.2 = 0.65
  std::vector<TrialRecord> done;
  for (double v : {0.2, 0.4, 0.6, 0.8})
    done.push_back(trial(static_cast<int64_t>(done.size()), TrialState::complete, {{10, v}}, v));
  const PercentilePruner top_quarter{.n_startup_trials = 0, .percentile = 25};
  CHECK(should_prune(top_quarter, done, {{10, 0.64}}, Direction::maximize));
  CHECK_FALSE(should_prune(top_quarter, done, {{10, 0.66}}, Direction::maximize));
  // the median (0.5) lets 0.64 go on; minimizing, p = 25 is the 25th percentile itself: 0.35
  CHECK_FALSE(should_prune(MedianPruner{.n_startup_trials = 0}, done, {{10, 0.64}},
                           Direction::maximize));
  CHECK(should_prune(top_quarter, done, {{10, 0.36}}, Direction::minimize));
  CHECK_FALSE(should_prune(top_quarter, done, {{10, 0.34}}, Direction::minimize));
  CHECK_THROWS_AS((PercentilePruner{.percentile = 101}.validate()), ConfigError);
}

TEST_CASE("wilcoxon pruner: against the best complete trial on the steps both reported") {
  // the best trial reported 0.9 on instances 0..5; this one is 0.1 lower on each
  const TrialRecord best = trial(0, TrialState::complete,
                                 {{0, .9}, {1, .8}, {2, .7}, {3, .6}, {4, .5}, {5, .4}}, .65);
  const TrialRecord worse = trial(1, TrialState::running,
                                  {{0, .8}, {1, .7}, {2, .6}, {3, .5}, {4, .4}, {5, .3}});
  // six negative differences, W+ = 0: one sign pattern in 2^6 is as low, p = 1/64
  CHECK(should_prune(WilcoxonPruner{}, {best, worse}, worse, Direction::maximize));
  CHECK_FALSE(should_prune(WilcoxonPruner{.p_threshold = 0.01}, {best, worse}, worse,
                           Direction::maximize));
  // minimizing, the lower trial is the better one: never pruned, p or not
  CHECK_FALSE(should_prune(WilcoxonPruner{}, {best, worse}, worse, Direction::minimize));
  // one step in common is too few; no complete trial: nothing to compare with
  const TrialRecord early = trial(1, TrialState::running, {{0, .1}});
  CHECK_FALSE(should_prune(WilcoxonPruner{}, {best, early}, early, Direction::maximize));
  const TrialRecord running = trial(0, TrialState::running, best.intermediate);
  CHECK_FALSE(should_prune(WilcoxonPruner{}, {running, worse}, worse, Direction::maximize));
  // a NaN anywhere: no decision
  TrialRecord nan = worse;
  nan.intermediate[2] = kNaN;
  CHECK_FALSE(should_prune(WilcoxonPruner{}, {best, nan}, nan, Direction::maximize));
}

namespace {

PrunerConfig config_of(const std::string& kind, const json& s) {
  const auto bound = [](const json& v, double none) {
    return v.is_null() ? none : v.get<double>();
  };
  if (kind == "threshold" || (s.contains("kind") && s["kind"] == "threshold"))
    return ThresholdPruner{bound(s["lower"], -kInf), bound(s["upper"], kInf),
                           s["n_warmup_steps"].get<int64_t>(), s["interval_steps"].get<int64_t>()};
  if (kind == "wilcoxon")
    return WilcoxonPruner{s["p_threshold"].get<double>(), s["n_startup_steps"].get<int64_t>()};
  if (kind == "median")
    return MedianPruner{.n_startup_trials = s["n_startup_trials"].get<int>(),
                        .n_warmup_steps = s["n_warmup_steps"].get<int64_t>()};
  if (kind == "percentile")
    return PercentilePruner{.n_startup_trials = s["n_startup_trials"].get<int>(),
                            .n_warmup_steps = s["n_warmup_steps"].get<int64_t>(),
                            .interval_steps = s["interval_steps"].get<int64_t>(),
                            .n_min_trials = s["n_min_trials"].get<int>(),
                            .percentile = s["percentile"].get<double>()};
  PatientPruner p{s["patience"].get<int64_t>(), s["min_delta"].get<double>(), {}};
  const json& w = s["wrapped"];
  if (w["kind"] != "none") p.wrapped.push_back(config_of(w["kind"].get<std::string>(), w));
  return p;
}

}  // namespace

TEST_CASE("judge: threshold, patient, Wilcoxon, percentile pruners decide as Optuna 5.0") {
  const json fx = fixture();
  MESSAGE("fixture from optuna " << fx["optuna"].get<std::string>());
  for (const char* kind : {"threshold", "patient", "wilcoxon", "percentile"}) {
    int reports = 0, index = 0, pruned = 0;
    for (const json& c : fx[kind]) {
      reports += replay_in_memory(config_of(kind, c["settings"]), c, cat(kind, " study ", index),
                                  "more");
      ++index;
      for (const json& t : c["trials"]) pruned += t["state"] == "pruned";
    }
    MESSAGE(std::string(kind) << ": " << index << " studies, " << reports
                              << " reports compared, " << pruned << " trials pruned");
    CHECK(reports > 1000);
    CHECK(pruned > 20);  // the fixture exercises pruning, not only "keep"
  }
}

TEST_CASE("Pruning::report with a Wilcoxon pruner: the best trial read back from the study file") {
  const json fx = fixture();
  for (int index = 0; index < 5; ++index) {
    const json& c = fx["wilcoxon"][index];
    test::TempDir dir;
    Space space;
    space.integer("x", 0, 9);
    const Direction d = c["direction"] == "maximize" ? Direction::maximize : Direction::minimize;
    Study s = Study::open(dir.file("w.db"), "wilcoxon", space, d, make_sampler("random", 1), 1);
    const Pruning pruning(s, config_of("wilcoxon", c["settings"]));
    for (const json& t : c["trials"]) {
      const std::optional<Trial> tr = s.ask();
      REQUIRE(tr);
      bool pruned = false;
      for (const json& r : t["reports"]) {
        try {
          pruning.report(tr->number, r[0].get<int64_t>(), number_of(r[1]));
        } catch (const TrialPruned&) {
          pruned = true;
        }
        INFO("study " << index << ", trial " << tr->number << ", step " << r[0]);
        CHECK(pruned == r[2].get<bool>());
      }
      const TrialState state = final_state(t["state"]);
      s.tell(tr->number, state, state == TrialState::complete ? number_of(t["value"]) : kNaN);
    }
  }
}

TEST_CASE("pruner_from_flags: threshold, wilcoxon, patient, and patience wrapping another") {
  auto t = pruner_from_flags({.pruner = "threshold", .warmup_steps = 3, .lower = 0.55});
  REQUIRE(t);
  CHECK(std::get<ThresholdPruner>(*t).lower == 0.55);
  CHECK(std::get<ThresholdPruner>(*t).upper == kInf);
  CHECK(std::get<ThresholdPruner>(*t).n_warmup_steps == 3);
  CHECK(pruner_key(*t, 10)["lower"] == 0.55);
  CHECK_FALSE(pruner_key(*t, 10).contains("upper"));
  auto w = pruner_from_flags({.pruner = "wilcoxon", .p_threshold = 0.05, .startup_steps = 4});
  CHECK(std::get<WilcoxonPruner>(*w).p_threshold == 0.05);
  CHECK(std::get<WilcoxonPruner>(*w).n_startup_steps == 4);
  auto p = pruner_from_flags({.pruner = "patient", .patience = 2, .min_delta = 0.01});
  CHECK(std::get<PatientPruner>(*p).wrapped.empty());
  CHECK(pruner_name(*p) == "patient");
  auto pm = pruner_from_flags({.pruner = "median", .patience = 3});
  REQUIRE(pm);
  const auto& wrapper = std::get<PatientPruner>(*pm);
  CHECK(wrapper.patience == 3);
  REQUIRE(wrapper.wrapped.size() == 1);
  CHECK(std::holds_alternative<MedianPruner>(wrapper.wrapped[0]));
  CHECK(pruner_name(*pm) == "patient(median)");
  CHECK(pruner_key(*pm, 10)["wraps"]["name"] == "median");
  // each setting belongs to its pruners, and is refused by name elsewhere
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "wilcoxon", .lower = 0.5}),
                       doctest::Contains("--pruner wilcoxon expected no --prune-lower, got one "
                                         "(it sets --pruner threshold)"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "threshold", .startup_steps = 5}),
                       doctest::Contains("expected no --prune-startup-steps"), ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "threshold"}),
                       doctest::Contains("expected a lower or an upper threshold"), ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "patient"}),
                       doctest::Contains("expected --prune-patience N"), ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "median", .min_delta = 0.1}),
                       doctest::Contains("--prune-min-delta expected --prune-patience"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "none", .patience = 2}),
                       doctest::Contains("got --pruner none"), ConfigError);
  CHECK_THROWS_AS(pruner_from_flags({.pruner = "wilcoxon", .p_threshold = 1.5}), ConfigError);
  // percentile: --prune-percentile required, and its own
  auto q = pruner_from_flags({.pruner = "percentile", .startup_trials = 2, .percentile = 25});
  REQUIRE(q);
  CHECK(std::get<PercentilePruner>(*q).percentile == 25);
  CHECK(std::get<PercentilePruner>(*q).n_startup_trials == 2);
  CHECK(pruner_name(*q) == "percentile");
  CHECK(pruner_key(*q, 10)["percentile"] == 25);
  CHECK_FALSE(pruner_key(*pruner_from_flags({.pruner = "median"}), 10).contains("percentile"));
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "percentile"}),
                       doctest::Contains("expected --prune-percentile P"), ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "median", .percentile = 25}),
                       doctest::Contains("expected no --prune-percentile"), ConfigError);
  CHECK_THROWS_WITH_AS(pruner_from_flags({.pruner = "halving", .warmup_steps = 5}),
                       doctest::Contains("(it sets --pruner median, percentile or threshold)"),
                       ConfigError);
}

}  // namespace test_more_pruners
