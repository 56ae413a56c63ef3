// tests/search/test_importance.cpp — PED-ANOVA parameter importances (search/importance.h).
// Oracles: hand arithmetic (a parameter the top trials spread over as everyone does scores 0;
// one they all share scores the most), and Optuna 5.0's get_param_importances itself on 120
// random studies of a mixed space, normalised and not (tests/fixtures/search/importance.json,
// made by make_importance_fixture.py).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "search/importance.h"

using namespace mase;
using namespace mase::search;
using nlohmann::json;

namespace test_importance {

namespace {

Space fixture_space() {
  Space s;
  s.real("a_real", -2.0, 3.0);
  s.real("b_logreal", 1e-4, 1e-1, true);
  s.integer("c_int", 1, 8);
  s.integer("d_step", 2, 12, 2);
  s.integer("e_logint", 1, 300, 1, true);
  s.categorical("f_cat", {"relu", "gelu", "tanh", "silu"});
  s.integer("g_one", 5, 5);
  return s;
}

TrialRecord complete(int64_t number, Values values, std::vector<double> objectives) {
  TrialRecord r;
  r.trial.number = number;
  r.trial.state = TrialState::complete;
  r.trial.values = std::move(values);
  r.trial.value = objectives[0];
  r.trial.objectives = std::move(objectives);
  return r;
}

}  // namespace

TEST_CASE("importance: the parameter the best trials share matters; one they spread over not") {
  Space s;
  s.integer("x", 0, 9);
  s.integer("y", 0, 9);
  // value = x: the top trial has x = 9; y is drawn without regard to the value
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 20; ++i)
    trials.push_back(complete(i, {{"x", i % 10}, {"y", (i * 7) % 10}}, {double(i % 10)}));
  const auto imp = param_importances(trials, s, {Direction::maximize});
  REQUIRE(imp.size() == 2);
  CHECK(imp[0].first == "x");
  CHECK(imp[0].second > 0.5);
  CHECK(imp[0].second + imp[1].second == doctest::Approx(1.0));
  // the same top and region sets: the densities agree, the divergence is 0
  const Param& x = s.at("x");
  CHECK(ped_anova_divergence(x, {1, 2, 3}, {1, 2, 3}) == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(ped_anova_divergence(x, {9, 9}, {0, 1, 2, 3, 9, 9}) > 0.1);
  // fewer than 2 complete trials: nothing to compare, 1/n each (Optuna's normalisation)
  const auto one = param_importances({trials[0]}, s, {Direction::maximize});
  CHECK(one[0].second == 0.5);
  CHECK_THROWS_AS(param_importances(trials, s, {Direction::maximize}, {.target_quantile = 1.0}),
                  ConfigError);
}

TEST_CASE("importance: Optuna 5.0's get_param_importances (PED-ANOVA) on 120 studies (fixture)") {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/importance.json");
  REQUIRE(in.good());
  const json fx = json::parse(in);
  MESSAGE("fixture from optuna " << fx["optuna"].get<std::string>());
  const Space space = fixture_space();
  int cases = 0;
  for (const json& c : fx["cases"]) {
    std::vector<Direction> dirs;
    for (const json& d : c["directions"])
      dirs.push_back(d == "maximize" ? Direction::maximize : Direction::minimize);
    std::vector<TrialRecord> trials;
    for (const json& t : c["trials"]) {
      Values v;
      for (const Param& p : space.params()) {
        const json& x = t["params"][p.name];
        v[p.name] = x.is_string() ? p.parse(x.get<std::string>()) : x.get<double>();
      }
      std::vector<double> values;
      if (t["state"] == "complete")
        for (const json& x : t["values"])
          values.push_back(x.is_string() ? INFINITY : x.get<double>());
      TrialRecord r = complete(static_cast<int64_t>(trials.size()), v,
                               values.empty() ? std::vector<double>{0.0} : values);
      if (values.empty()) r.trial.state = TrialState::failed;
      trials.push_back(r);
    }
    for (const char* which : {"importances", "raw"}) {
      const auto got = param_importances(trials, space, dirs,
                                         {.normalize = std::string(which) == "importances"});
      INFO("case " << cases << " " << which << ": " << c[which].dump());
      REQUIRE(got.size() == c[which].size());
      for (const auto& [name, value] : got)
        CHECK(value == doctest::Approx(c[which][name].get<double>()).epsilon(1e-9));
    }
    ++cases;
  }
  CHECK(cases == 120);
}

}  // namespace test_importance
