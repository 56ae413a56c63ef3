// search/halving.cpp — successive halving and Hyperband, Optuna's rules (search/halving.h).
#include "search/halving.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace mase::search {

void SuccessiveHalvingPruner::validate() const {
  MASE_CHECK(min_resource >= 0, ConfigError, "[pruner] expected min_resource >= 1 (or 0: auto), "
             "got ", min_resource);
  MASE_CHECK(reduction_factor >= 2, ConfigError, "[pruner] expected reduction_factor >= 2, got ",
             reduction_factor);
  MASE_CHECK(min_early_stopping_rate >= 0, ConfigError, "[pruner] expected "
             "min_early_stopping_rate >= 0, got ", min_early_stopping_rate);
  MASE_CHECK(bootstrap_count >= 0, ConfigError, "[pruner] expected bootstrap_count >= 0, got ",
             bootstrap_count);
  MASE_CHECK(bootstrap_count == 0 || min_resource > 0, ConfigError, "[pruner] expected "
             "bootstrap_count 0 with min_resource auto, got ", bootstrap_count,
             " (set min_resource: Optuna refuses the pair too)");
}

void HyperbandPruner::validate() const {
  MASE_CHECK(min_resource >= 1, ConfigError, "[pruner] expected min_resource >= 1, got ",
             min_resource);
  MASE_CHECK(max_resource >= 0, ConfigError, "[pruner] expected max_resource >= 1 (or 0: auto), "
             "got ", max_resource);
  MASE_CHECK(reduction_factor >= 2, ConfigError, "[pruner] expected reduction_factor >= 2, got ",
             reduction_factor);
  MASE_CHECK(bootstrap_count >= 0, ConfigError, "[pruner] expected bootstrap_count >= 0, got ",
             bootstrap_count);
  MASE_CHECK(bootstrap_count == 0 || max_resource > 0, ConfigError, "[pruner] expected "
             "bootstrap_count 0 with max_resource auto, got ", bootstrap_count,
             " (set max_resource: Optuna refuses the pair too)");
}

namespace {

// The longest complete trial's last reported step; -1 if no complete trial reported any.
int64_t longest_complete(const std::vector<TrialRecord>& trials) {
  int64_t last = -1;
  for (const TrialRecord& r : trials)
    if (r.trial.state == TrialState::complete && !r.intermediate.empty())
      last = std::max(last, r.intermediate.rbegin()->first);
  return last;
}

// min_resource · η^k, or -1 once it passes `limit` (Python's integers do not overflow; ours
// stop counting where the answer can no longer change).
int64_t rung_step(int64_t min_resource, int64_t eta, int k, int64_t limit) {
  int64_t s = min_resource;
  for (int i = 0; i < k; ++i) {
    if (s > limit / eta) return -1;
    s *= eta;
  }
  return s;
}

// Optuna's _is_trial_promotable_to_next_rung: is `value` among the best ⌊n/η⌋ of `competing`
// (n values, `value` among them; at least the best when n < η)?
bool promotable(double value, std::vector<double> competing, int eta, Direction direction) {
  const int64_t n = static_cast<int64_t>(competing.size());
  const int64_t idx = std::max<int64_t>(n / eta - 1, 0);
  std::sort(competing.begin(), competing.end());
  return direction == Direction::maximize ? value >= competing[static_cast<size_t>(n - 1 - idx)]
                                          : value <= competing[static_cast<size_t>(idx)];
}

}  // namespace

int64_t halving_min_resource(const std::vector<TrialRecord>& trials) {
  const int64_t last = longest_complete(trials);
  return last < 0 ? 0 : std::max<int64_t>(last / 100, 1);
}

PruneDecision successive_halving(const SuccessiveHalvingPruner& p,
                                   const std::vector<TrialRecord>& trials,
                                   const TrialRecord& self, Direction direction) {
  PruneDecision d;
  if (self.intermediate.empty() || p.min_resource <= 0) return d;
  const auto& [step, value] = *self.intermediate.rbegin();  // the last report
  int rung = 0;  // the first rung this trial has not completed
  while (self.rungs.count(rung)) ++rung;
  for (;; ++rung) {
    const int64_t promotion =
        rung_step(p.min_resource, p.reduction_factor, p.min_early_stopping_rate + rung, step);
    if (promotion < 0 || step < promotion) return d;  // not at this rung yet
    if (std::isnan(value)) {
      d.prune = true;
      return d;
    }
    d.rungs.emplace_back(rung, value);
    std::vector<double> competing;  // every trial's value at this rung, then this one's
    for (const TrialRecord& r : trials)
      if (r.trial.number != self.trial.number)
        if (auto it = r.rungs.find(rung); it != r.rungs.end()) competing.push_back(it->second);
    competing.push_back(value);
    if (static_cast<int64_t>(competing.size()) <= p.bootstrap_count ||
        !promotable(value, competing, p.reduction_factor, direction)) {
      d.prune = true;
      return d;
    }
  }
}

int64_t hyperband_max_resource(const std::vector<TrialRecord>& trials) {
  return longest_complete(trials) + 1;  // 0 without a complete trial
}

std::vector<int64_t> hyperband_budgets(const HyperbandPruner& p, int64_t max_resource) {
  // Optuna's floor(math.log(max / min, η)) + 1: log(x) / log(η) in doubles, as Python computes
  // it (log(243, 3) is 4.999999999999999 there, so 243 gives 5 brackets, not 6)
  const double ratio = static_cast<double>(max_resource) / static_cast<double>(p.min_resource);
  const double n_double = std::floor(std::log(ratio) / std::log(p.reduction_factor)) + 1;
  const int n = n_double < 1 ? 0 : static_cast<int>(n_double);
  std::vector<int64_t> budgets;
  for (int bracket = 0; bracket < n; ++bracket) {
    const int s = n - 1 - bracket;
    int64_t pow = 1;
    for (int i = 0; i < s; ++i) pow *= p.reduction_factor;
    budgets.push_back((n * pow + s) / (s + 1));  // ⌈n · η^s / (s + 1)⌉
  }
  return budgets;
}

int hyperband_bracket(const std::string& study_name, int64_t number,
                      const std::vector<int64_t>& budgets) {
  int64_t total = 0;
  for (int64_t b : budgets) total += b;
  MASE_CHECK(total > 0, ConfigError, "[pruner] expected Hyperband brackets, got none");
  const std::string key = study_name + "_" + std::to_string(number);
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(key.data()),
                          static_cast<uInt>(key.size()));
  auto n = static_cast<int64_t>(crc % static_cast<uLong>(total));
  for (size_t bracket = 0; bracket < budgets.size(); ++bracket) {
    n -= budgets[bracket];
    if (n < 0) return static_cast<int>(bracket);
  }
  return static_cast<int>(budgets.size()) - 1;  // unreachable: n < total
}

SuccessiveHalvingPruner hyperband_bracket_pruner(const HyperbandPruner& p, int bracket) {
  return {p.min_resource, p.reduction_factor, bracket, p.bootstrap_count};
}

}  // namespace mase::search
