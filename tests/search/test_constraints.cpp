// tests/search/test_constraints.cpp — constrained optimization (Optuna's trial.set_constraint):
// constraints stored and read back in Optuna's two formats, the best trial and the Pareto front
// among feasible trials, TPE's split with infeasible trials last, constrained NSGA-II.
// Oracles: Optuna 5.0 itself — _split_trials on 200 random studies of 1–3 objectives, the
// elite selection, constrained fronts and _constrained_dominates on 150 populations
// (tests/fixtures/search/constraints.json, made by make_constraints_fixture.py) — and hand
// arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/nsga2.h"
#include "search/plot.h"
#include "search/study.h"
#include "search/study_test_util.h"
#include "search/tpe.h"

using namespace mase;
using namespace mase::search;
using nlohmann::json;

namespace test_constraints {

namespace {

const json& fixture() {
  static const json fx = [] {
    std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/constraints.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return fx;
}

std::map<std::string, double> constraints_of(const json& c) {
  std::map<std::string, double> out;
  if (!c.is_null())
    for (const auto& [k, v] : c.items()) out[k] = v.get<double>();
  return out;
}

std::vector<Direction> directions_of(const json& d) {
  std::vector<Direction> out;
  for (const json& w : d)
    out.push_back(w == "maximize" ? Direction::maximize : Direction::minimize);
  return out;
}

}  // namespace

TEST_CASE("violation: the sum of the positive constraints") {
  Trial t;
  CHECK(violation(t) == 0);
  t.constraints = {{"a", -1.0}, {"b", 0.0}};
  CHECK(violation(t) == 0);  // <= 0 everywhere: feasible
  t.constraints = {{"a", 0.5}, {"b", -2.0}, {"c", 1.25}};
  CHECK(violation(t) == 1.75);
}

TEST_CASE("tpe_split: infeasible trials after complete and pruned ones, as Optuna's (fixture)") {
  int cases = 0, with_infeasible_below = 0;
  for (const json& c : fixture()["tpe_split"]) {
    const std::vector<Direction> dirs = directions_of(c["directions"]);
    const bool one = dirs.size() == 1, minimize = one && dirs[0] == Direction::minimize;
    std::vector<Trial> history;  // as Study::ask builds it
    for (const json& t : c["trials"]) {
      Trial tr;
      tr.number = static_cast<int64_t>(history.size());
      tr.values["x"] = 0.5;
      tr.constraints = constraints_of(t["constraints"]);
      if (t["state"] == "complete") {
        tr.state = TrialState::complete;
        tr.objectives = t["values"].get<std::vector<double>>();
        tr.value = minimize ? -tr.objectives[0] : tr.objectives[0];  // higher is better
      } else {
        tr.state = TrialState::pruned;
        const json& iv = t["intermediate"];
        if (!iv.empty()) {
          const double v = iv.back()[1].get<double>();
          tr.last_report = {iv.back()[0].get<int64_t>(), minimize ? -v : v};
        }
      }
      history.push_back(tr);
    }
    const TpeSplit split = one ? tpe_split(history, false) : tpe_split(history, false, dirs);
    std::vector<int64_t> good;
    for (const Trial* t : split.good) {
      good.push_back(t->number);
      with_infeasible_below += violation(*t) > 0;
    }
    INFO(c.dump());
    CHECK(good == c["below"].get<std::vector<int64_t>>());
    CHECK(split.good.size() + split.bad.size() == history.size());
    ++cases;
  }
  CHECK(cases == 200);
  CHECK(with_infeasible_below > 0);  // the fixture reaches the infeasible group
}

TEST_CASE("nsga2: constrained fronts, elite and domination as Optuna's (fixture)") {
  int constrained_cases = 0;
  for (const json& c : fixture()["elite"]) {
    const std::vector<Direction> dirs = directions_of(c["directions"]);
    const json& trials = c["trials"];
    std::vector<int64_t> order = c["order"].get<std::vector<int64_t>>();
    std::vector<nsga2::Point> points;
    std::vector<double> penalty;
    bool constrained = false;
    for (int64_t n : order) {
      Trial t;
      t.constraints = constraints_of(trials[static_cast<size_t>(n)]["constraints"]);
      constrained = constrained || !t.constraints.empty();
      points.push_back(trials[static_cast<size_t>(n)]["values"].get<std::vector<double>>());
      penalty.push_back(violation(t));
    }
    if (!constrained) penalty.clear();  // Optuna ranks such a population as unconstrained
    constrained_cases += constrained;
    auto numbers = [&](const std::vector<size_t>& idx) {
      std::vector<int64_t> out;
      for (size_t i : idx) out.push_back(order[i]);
      return out;
    };
    INFO(c.dump());
    const auto fronts = constrained ? nsga2::constrained_fronts(points, dirs, penalty)
                                    : nsga2::fronts(points, dirs);
    std::vector<std::vector<int64_t>> got;
    for (const auto& f : fronts) got.push_back(numbers(f));
    CHECK(got == c["fronts"].get<std::vector<std::vector<int64_t>>>());
    CHECK(numbers(nsga2::elite(points, dirs, c["population_size"].get<size_t>(), penalty)) ==
          c["elite"].get<std::vector<int64_t>>());
    for (const json& pair : c["dominates"]) {
      const auto a = static_cast<size_t>(pair[0].get<int64_t>());
      const auto b = static_cast<size_t>(pair[1].get<int64_t>());
      Trial ta, tb;
      ta.constraints = constraints_of(trials[a]["constraints"]);
      tb.constraints = constraints_of(trials[b]["constraints"]);
      CHECK(nsga2::constrained_dominates(trials[a]["values"].get<std::vector<double>>(),
                                         violation(ta),
                                         trials[b]["values"].get<std::vector<double>>(),
                                         violation(tb), dirs) == pair[2].get<bool>());
    }
  }
  CHECK(constrained_cases > 100);
}

TEST_CASE("Study: constraints stored as Optuna's, read in both its formats; the best feasible") {
  test::TempDir dir;
  const std::string db = dir.file("c.db");
  Space space;
  space.integer("x", 0, 9);
  Study s = Study::open(db, "c", space, Direction::maximize, make_sampler("random", 1), 1);
  // trial 0: the best value but infeasible; trial 1 feasible (0 counts as feasible)
  for (auto [value, c] : std::vector<std::pair<double, double>>{{0.9, 0.5}, {0.7, 0.0}}) {
    auto t = s.ask();
    REQUIRE(t);
    Outcome o;
    o.value = value;
    o.constraints = {{"params", c}};
    s.tell(t->number, o);
  }
  std::vector<TrialRecord> all = s.trials();
  CHECK(all[0].trial.constraints == std::map<std::string, double>{{"params", 0.5}});
  CHECK(test_util::query_one(db, "SELECT value_json FROM trial_system_attributes WHERE key = "
                                 "'constraints:params' ORDER BY trial_id LIMIT 1") == "0.5");
  REQUIRE(s.best());
  CHECK(s.best()->trial.number == 1);  // 0.9 is infeasible
  // Optuna's older constraints_func wrote a list: [1.0, -2.0] is constraints "0" and "1"
  auto t = s.ask();
  REQUIRE(t);
  test_util::raw_sql(db, cat("INSERT INTO trial_system_attributes(trial_id, key, value_json) "
                             "SELECT trial_id, 'constraints', '[1.0, -2.0]' FROM trials "
                             "WHERE number = ", t->number));
  s.tell(t->number, TrialState::complete, 0.95);
  all = s.trials();
  CHECK(all[2].trial.constraints == std::map<std::string, double>{{"0", 1.0}, {"1", -2.0}});
  CHECK(s.best()->trial.number == 1);
  // the best-so-far curve (the Lab 2 figure) stays at the feasible 0.7
  const std::vector<double> curve = running_best(all, Direction::maximize);
  REQUIRE(curve.size() == 3);
  CHECK(std::isnan(curve[0]));  // trial 0's 0.9 is infeasible: nothing yet
  CHECK(curve[1] == 0.7);
  CHECK(curve[2] == 0.7);       // trial 2's 0.95 too
  CHECK_THROWS_AS(
      [&] {
        auto u = s.ask();
        s.set_constraint(u->number, "c", std::nan(""));
      }(),
      ConfigError);
}

TEST_CASE("Study: the Pareto front of a constrained study has feasible trials only") {
  test::TempDir dir;
  Space space;
  space.integer("x", 0, 9);
  Study s = Study::open(dir.file("f.db"), "f", space, {Direction::maximize, Direction::minimize},
                        make_sampler("nsga2:4", 1), 1);
  // (1, 0) dominates both others but is infeasible; (0.5, 1) and (0.8, 2) form the front
  for (auto [a, b, c] : std::vector<std::tuple<double, double, double>>{
           {1.0, 0.0, 3.0}, {0.5, 1.0, -1.0}, {0.8, 2.0, 0.0}}) {
    auto t = s.ask();
    REQUIRE(t);
    Outcome o;
    o.values = {a, b};
    o.constraints = {{"c", c}};
    s.tell(t->number, o);
  }
  std::vector<int64_t> front;
  for (const TrialRecord& r : s.pareto_front()) front.push_back(r.trial.number);
  CHECK(front == std::vector<int64_t>{1, 2});
}

}  // namespace test_constraints
