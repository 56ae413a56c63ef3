// search/curve_pruners.cpp — Optuna's ThresholdPruner and PatientPruner's rule. Read
// search/curve_pruners.h first.
#include "search/curve_pruners.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/error.h"

namespace mase::search {

void ThresholdPruner::validate() const {
  MASE_CHECK(!std::isnan(lower) && !std::isnan(upper), ConfigError,
             "[pruner] expected threshold bounds that are numbers, got NaN");
  MASE_CHECK(std::isfinite(lower) || std::isfinite(upper), ConfigError,
             "[pruner] expected a lower or an upper threshold (--prune-lower, --prune-upper), "
             "got neither");
  MASE_CHECK(lower <= upper, ConfigError, "[pruner] expected lower <= upper, got ", lower,
             " > ", upper);
  MASE_CHECK(n_warmup_steps >= 0, ConfigError, "[pruner] expected n_warmup_steps >= 0, got ",
             n_warmup_steps);
  MASE_CHECK(interval_steps >= 1, ConfigError, "[pruner] expected interval_steps >= 1, got ",
             interval_steps);
}

bool first_in_interval(int64_t step, const std::map<int64_t, double>& reported, int64_t warmup,
                       int64_t interval) {
  const int64_t interval_start = (step - warmup) / interval * interval + warmup;
  int64_t before = -1;  // the latest earlier step reported
  for (const auto& [s, v] : reported)
    if (s != step) before = std::max(before, s);
  return before < interval_start;
}

bool should_prune(const ThresholdPruner& pruner, const std::map<int64_t, double>& reported) {
  if (reported.empty()) return false;
  const auto& [step, value] = *reported.rbegin();  // the last (largest) step
  if (step < pruner.n_warmup_steps) return false;
  if (!first_in_interval(step, reported, pruner.n_warmup_steps, pruner.interval_steps))
    return false;
  return std::isnan(value) || value < pruner.lower || value > pruner.upper;
}

bool patience_ran_out(int64_t patience, double min_delta,
                      const std::map<int64_t, double>& reported, Direction direction) {
  if (static_cast<int64_t>(reported.size()) <= patience + 1) return false;
  const bool maximize = direction == Direction::maximize;
  // nanmax (nanmin) of one side; NaN if it holds nothing else
  const auto best_of = [&](auto first, auto last) {
    double best = std::nan("");
    for (auto it = first; it != last; ++it)
      if (!std::isnan(it->second) &&
          (std::isnan(best) || (maximize ? it->second > best : it->second < best)))
        best = it->second;
    return best;
  };
  const auto split = std::prev(reported.end(), patience + 1);  // the last patience + 1 reports
  const double before = best_of(reported.begin(), split);
  const double after = best_of(split, reported.end());
  // a NaN side compares false: keep
  return maximize ? before - min_delta > after : before + min_delta < after;
}

}  // namespace mase::search
