// tests/search/test_halving.cpp — successive halving and Hyperband (search/halving.h) and
// `judge` / Pruning with them (search/pruner.h). Oracles: hand arithmetic (rung steps, the
// top-1/η rule, Hyperband's brackets and Python's crc32), and Optuna 5.0 itself — 250 whole
// studies, every report's decision and every rung written (tests/fixtures/search/halving.json,
// made by make_halving_fixture.py), replayed in memory through `judge` and, for some, through a
// real study file and Pruning::report, where the rungs go through the storage.
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

namespace test_halving {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TrialRecord trial(int64_t number, TrialState state, std::map<int64_t, double> intermediate,
                  std::map<int, double> rungs = {}) {
  TrialRecord r;
  r.trial.number = number;
  r.trial.state = state;
  r.intermediate = std::move(intermediate);
  r.rungs = std::move(rungs);
  return r;
}

using Rungs = std::vector<std::pair<int, double>>;

}  // namespace

TEST_CASE("successive_halving: the top 1/eta of a rung's values go on") {
  const SuccessiveHalvingPruner p{.min_resource = 10, .reduction_factor = 3};
  // rung 0 holds 0.2, 0.5, 0.8 (a complete, a pruned and a failed trial: every state counts)
  const std::vector<TrialRecord> others = {trial(0, TrialState::complete, {{10, 0.2}}, {{0, 0.2}}),
                                           trial(1, TrialState::pruned, {{10, 0.5}}, {{0, 0.5}}),
                                           trial(2, TrialState::failed, {{10, 0.8}}, {{0, 0.8}})};
  // 4 values with this one: ⌊4/3⌋ = 1 goes on, so it must be the best
  PruneDecision d = successive_halving(p, others, trial(3, TrialState::running, {{10, 0.6}}),
                                         Direction::maximize);
  CHECK(d.prune);
  CHECK(d.rungs == Rungs{{0, 0.6}});  // recorded even when pruned: later trials compete with it
  d = successive_halving(p, others, trial(3, TrialState::running, {{10, 0.9}}),
                         Direction::maximize);
  CHECK_FALSE(d.prune);
  CHECK(d.rungs == Rungs{{0, 0.9}});  // and not at rung 1 (step 30) yet
  // minimizing, 0.1 is the best
  d = successive_halving(p, others, trial(3, TrialState::running, {{10, 0.1}}),
                         Direction::minimize);
  CHECK_FALSE(d.prune);
  // with two more values at the rung (6 in all) the second best goes on too: ⌊6/3⌋ = 2
  std::vector<TrialRecord> more = others;
  more.push_back(trial(4, TrialState::complete, {{10, 0.1}}, {{0, 0.1}}));
  more.push_back(trial(5, TrialState::complete, {{10, 0.3}}, {{0, 0.3}}));
  CHECK_FALSE(successive_halving(p, more, trial(6, TrialState::running, {{10, 0.7}}),
                                 Direction::maximize).prune);  // 0.8, 0.7 are the top two
  CHECK(successive_halving(p, more, trial(6, TrialState::running, {{10, 0.45}}),
                           Direction::maximize).prune);  // below 0.8 and 0.5
  // before rung 0's step nothing is judged, whatever the value
  d = successive_halving(p, others, trial(3, TrialState::running, {{5, 0.0}}),
                         Direction::maximize);
  CHECK_FALSE(d.prune);
  CHECK(d.rungs.empty());
}

TEST_CASE("successive_halving: one report passes every rung it reaches; the last value is judged") {
  const SuccessiveHalvingPruner p{.min_resource = 1, .reduction_factor = 2};
  // alone, a trial is the best at each rung: its first report at step 5 passes 1, 2 and 4
  PruneDecision d = successive_halving(p, {}, trial(0, TrialState::running, {{5, 0.4}}),
                                         Direction::maximize);
  CHECK_FALSE(d.prune);
  CHECK(d.rungs == Rungs{{0, 0.4}, {1, 0.4}, {2, 0.4}});
  // a trial with rungs 0 and 1 already starts at rung 2; its *last* value is judged, not its best
  const std::vector<TrialRecord> others = {
      trial(0, TrialState::complete, {{4, 0.5}}, {{0, 0.5}, {1, 0.5}, {2, 0.5}})};
  d = successive_halving(p, others,
                         trial(1, TrialState::running, {{2, 0.9}, {4, 0.3}}, {{0, 0.9}, {1, 0.9}}),
                         Direction::maximize);
  CHECK(d.prune);
  CHECK(d.rungs == Rungs{{2, 0.3}});
  // min_early_stopping_rate s = 1 moves rung 0 to min_resource · η = 2
  const SuccessiveHalvingPruner late{.min_resource = 1, .reduction_factor = 2,
                                     .min_early_stopping_rate = 1};
  CHECK(successive_halving(late, {}, trial(0, TrialState::running, {{1, 0.4}}),
                           Direction::maximize).rungs.empty());
}

TEST_CASE("successive_halving: NaN, bootstrap_count, auto min_resource, validation") {
  const SuccessiveHalvingPruner p{.min_resource = 2, .reduction_factor = 2};
  // NaN at a rung prunes without recording it; NaN before rung 0 does nothing
  PruneDecision d = successive_halving(p, {}, trial(0, TrialState::running, {{2, kNaN}}),
                                         Direction::maximize);
  CHECK(d.prune);
  CHECK(d.rungs.empty());
  CHECK_FALSE(successive_halving(p, {}, trial(0, TrialState::running, {{1, kNaN}}),
                                 Direction::maximize).prune);
  // bootstrap_count 2: a rung holding 2 values or fewer (this one's included) prunes
  const SuccessiveHalvingPruner boot{.min_resource = 2, .reduction_factor = 2,
                                     .bootstrap_count = 2};
  CHECK(successive_halving(boot, {}, trial(0, TrialState::running, {{2, 0.9}}),
                           Direction::maximize).prune);
  // "auto": the longest complete trial's last step / 100, at least 1; nothing before one completes
  CHECK(halving_min_resource({}) == 0);
  CHECK(halving_min_resource({trial(0, TrialState::pruned, {{900, 0.1}})}) == 0);
  CHECK(halving_min_resource({trial(0, TrialState::complete, {{50, 0.1}})}) == 1);
  CHECK(halving_min_resource({trial(0, TrialState::complete, {{250, 0.1}}),
                              trial(1, TrialState::complete, {{320, 0.1}})}) == 3);
  CHECK_THROWS_AS((SuccessiveHalvingPruner{.reduction_factor = 1}.validate()), ConfigError);
  CHECK_THROWS_AS((SuccessiveHalvingPruner{.min_resource = 0, .bootstrap_count = 1}.validate()),
                  ConfigError);
  CHECK_THROWS_AS((HyperbandPruner{.min_resource = 0}.validate()), ConfigError);
}

TEST_CASE("hyperband: brackets, their budgets and crc32 as Optuna's") {
  // min 1, max 27, η 3: ⌊log₃ 27⌋ + 1 = 4 brackets, ⌈4 · 3^s / (s + 1)⌉ for s = 3, 2, 1, 0
  const HyperbandPruner hb{.min_resource = 1, .reduction_factor = 3};
  const std::vector<int64_t> budgets = hyperband_budgets(hb, 27);
  CHECK(budgets == std::vector<int64_t>{27, 12, 6, 4});
  // Python's math.log(243, 3) is 4.999999999999999: 5 brackets, not 6
  CHECK(hyperband_budgets(hb, 243).size() == 5);
  CHECK(hyperband_budgets(hb, 2).size() == 1);
  CHECK(hyperband_budgets(HyperbandPruner{.min_resource = 5}, 3).empty());  // max below min
  // binascii.crc32(b"halving_0") = 2502387428, % 49 = 9 -> bracket 0; "halving_1": 27 -> 1;
  // "halving_2": 48 -> 3; "halving_3": 40 -> 2
  CHECK(hyperband_bracket("halving", 0, budgets) == 0);
  CHECK(hyperband_bracket("halving", 1, budgets) == 1);
  CHECK(hyperband_bracket("halving", 2, budgets) == 3);
  CHECK(hyperband_bracket("halving", 3, budgets) == 2);
  const SuccessiveHalvingPruner b2 = hyperband_bracket_pruner(hb, 2);
  CHECK(b2.min_early_stopping_rate == 2);
  CHECK(b2.min_resource == 1);
  CHECK(b2.reduction_factor == 3);
  CHECK(hyperband_max_resource({trial(0, TrialState::complete, {{30, 0.1}})}) == 31);
}

namespace {

json fixture() {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/halving.json");
  REQUIRE(in.good());
  return json::parse(in);
}

PrunerConfig config_of(const std::string& kind, const json& s) {
  // "auto" is 0 here
  const auto resource = [](const json& v) { return v.is_string() ? 0 : v.get<int64_t>(); };
  if (kind == "halving")
    return SuccessiveHalvingPruner{resource(s["min_resource"]), s["reduction_factor"].get<int>(),
                                   s["min_early_stopping_rate"].get<int>(),
                                   s["bootstrap_count"].get<int>()};
  return HyperbandPruner{s["min_resource"].get<int64_t>(), resource(s["max_resource"]),
                         s["reduction_factor"].get<int>(), s["bootstrap_count"].get<int>()};
}

}  // namespace

TEST_CASE("judge: successive halving and Hyperband decide as Optuna 5.0 (fixture, in memory)") {
  const json fx = fixture();
  MESSAGE("fixture from optuna " << fx["optuna"].get<std::string>());
  for (const char* kind : {"halving", "hyperband"}) {
    int reports = 0, index = 0;
    for (const json& c : fx[kind]) {
      reports += replay_in_memory(config_of(kind, c["settings"]), c,
                                  cat(kind, " scenario ", index), "halving");
      ++index;
    }
    MESSAGE(std::string(kind) << ": " << index << " studies, " << reports << " reports compared");
    CHECK(reports > 1000);
  }
}

TEST_CASE("Pruning::report with halving pruners: rungs go through the study file (fixture)") {
  // The first scenarios of each kind on a real study: Pruning::report records the rungs with
  // Study::record_rung and reads everyone's back with trials(), as workers sharing a file do.
  const json fx = fixture();
  for (const char* kind : {"halving", "hyperband"}) {
    for (int index = 0; index < 6; ++index) {
      const json& c = fx[kind][index];
      test::TempDir dir;
      Space space;
      space.integer("x", 0, 9);
      const Direction d = c["direction"] == "maximize" ? Direction::maximize : Direction::minimize;
      Study s = Study::open(dir.file("h.db"), "halving", space, d, make_sampler("random", 1), 1);
      const Pruning pruning(s, config_of(kind, c["settings"]));
      for (const json& t : c["trials"]) {
        const std::optional<Trial> tr = s.ask();
        REQUIRE(tr);
        bool pruned = false;
        double last = kNaN;
        for (const json& r : t["reports"]) {
          last = r[1].is_null() ? kNaN : r[1].get<double>();
          try {
            pruning.report(tr->number, r[0].get<int64_t>(), last);
          } catch (const TrialPruned&) {
            pruned = true;
          }
          INFO(kind << " scenario " << index << ", trial " << tr->number << ", step " << r[0]);
          CHECK(pruned == r[2].get<bool>());
        }
        const TrialState state = final_state(t["state"]);
        s.tell(tr->number, state, state == TrialState::complete ? last : kNaN);
        const std::vector<TrialRecord> all = s.trials();
        INFO(kind << " scenario " << index << ", trial " << tr->number);
        CHECK(all.back().rungs == rungs_of(t["rungs"]));
      }
    }
  }
}

TEST_CASE("parse_pruner: halving and hyperband from the flags") {
  // rung 0 at the first evaluation by default; Optuna's η unless given
  auto h = parse_pruner({.pruner = "halving"}, 25, 200);
  REQUIRE(h);
  CHECK(std::get<SuccessiveHalvingPruner>(*h).min_resource == 25);
  CHECK(std::get<SuccessiveHalvingPruner>(*h).reduction_factor == 4);
  h = parse_pruner({.pruner = "halving", .min_resource = 0, .reduction_factor = 3}, 25, 200);
  CHECK(std::get<SuccessiveHalvingPruner>(*h).min_resource == 0);  // Optuna's "auto"
  CHECK(std::get<SuccessiveHalvingPruner>(*h).reduction_factor == 3);
  auto hb = parse_pruner({.pruner = "hyperband"}, 10, 200);
  REQUIRE(hb);
  CHECK(std::get<HyperbandPruner>(*hb).min_resource == 10);
  CHECK(std::get<HyperbandPruner>(*hb).reduction_factor == 3);
  CHECK(pruner_name(*hb) == "hyperband");
  CHECK(pruner_key(*hb, 10)["name"] == "hyperband");
  // another pruner's settings are refused, not ignored
  CHECK_THROWS_WITH_AS(parse_pruner({.pruner = "halving", .warmup_steps = 20}, 25, 200),
                       doctest::Contains("--pruner halving expected no --prune-warmup, got one"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_pruner({.pruner = "median", .reduction_factor = 3}, 25, 200),
                       doctest::Contains("--pruner median expected no --prune-reduction, got one"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_pruner({.pruner = "hyperband", .reduction_factor = 1}, 25, 200),
                       doctest::Contains("reduction_factor >= 2"), ConfigError);
}

}  // namespace test_halving
