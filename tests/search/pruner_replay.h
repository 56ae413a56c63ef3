// tests/search/pruner_replay.h — replaying a study that Optuna itself decided, report by report,
// through `judge` (search/pruner.h): the fixtures of test_halving.cpp and
// test_more_pruners.cpp. Each fixture study is {"direction", "trials": [{"reports": [[step,
// value, Optuna's decision], ...], "state", "value"?, "rungs"?}]}; values are numbers, null
// (NaN), "inf" or "-inf".
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/pruner.h"

namespace mase::search::test_util {

inline double number_of(const nlohmann::json& v) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string())
    return v == "inf" ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity();
  return v.get<double>();
}

inline TrialState final_state(const std::string& s) {
  return s == "complete" ? TrialState::complete : s == "pruned" ? TrialState::pruned
                                                                : TrialState::failed;
}

// Successive halving's "completed_rung_<k>" system attributes, as rung -> value.
inline std::map<int, double> rungs_of(const nlohmann::json& attrs) {
  std::map<int, double> out;
  for (const auto& [key, v] : attrs.items()) out[std::stoi(key.substr(15))] = v.get<double>();
  return out;
}

// Replays study `c` in memory under `pruner`: each report's decision against Optuna's, the
// rungs each trial wrote (where the fixture has them), the value a complete trial was told
// (where it has one: the Wilcoxon pruner's best trial). `study_name` picks Hyperband's
// brackets. Returns the number of reports compared.
inline int replay_in_memory(const PrunerConfig& pruner, const nlohmann::json& c,
                            const std::string& label, const std::string& study_name) {
  const Direction dir = c["direction"] == "maximize" ? Direction::maximize : Direction::minimize;
  PrunerMemo memo;
  std::vector<TrialRecord> trials;
  int compared = 0;
  for (const nlohmann::json& t : c["trials"]) {
    const auto number = static_cast<int64_t>(trials.size());
    trials.emplace_back();
    trials.back().trial.number = number;
    for (const nlohmann::json& r : t["reports"]) {
      trials.back().intermediate[r[0].get<int64_t>()] = number_of(r[1]);
      const PruneDecision d = judge(pruner, memo, trials, trials.back(), dir, study_name);
      for (const auto& [rung, v] : d.rungs) trials.back().rungs[rung] = v;
      INFO(label << ", trial " << number << ", step " << r[0]);
      CHECK(d.prune == r[2].get<bool>());
      ++compared;
    }
    trials.back().trial.state = final_state(t["state"]);
    if (t.contains("value")) trials.back().trial.value = number_of(t["value"]);
    INFO(label << ", trial " << number);
    if (t.contains("rungs")) CHECK(trials.back().rungs == rungs_of(t["rungs"]));
  }
  return compared;
}

}  // namespace mase::search::test_util
