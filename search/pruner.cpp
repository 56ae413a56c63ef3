// search/pruner.cpp — Optuna's MedianPruner, and the report-then-prune call of an objective.
// Read search/pruner.h first (the rules, in order).
#include "search/pruner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace mase::search {

void MedianPruner::validate() const {
  MASE_CHECK(n_startup_trials >= 0, ConfigError, "[pruner] expected n_startup_trials >= 0, got ",
             n_startup_trials);
  MASE_CHECK(n_warmup_steps >= 0, ConfigError, "[pruner] expected n_warmup_steps >= 0, got ",
             n_warmup_steps);
  MASE_CHECK(interval_steps >= 1, ConfigError, "[pruner] expected interval_steps >= 1, got ",
             interval_steps);
  MASE_CHECK(n_min_trials >= 1, ConfigError, "[pruner] expected n_min_trials >= 1, got ",
             n_min_trials);
}

double nan_percentile(std::vector<double> values, double q) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  // numpy's "linear" method: the value at fractional rank q/100 · (n − 1)
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  // numpy's _lerp, rounding included: from the upper value when frac >= 0.5 (a median of an
  // even count: 0.342 and 0.934 give 0.638 there, not a + (b - a) / 2 = 0.6380000000000001)
  const double diff = values[hi] - values[lo];
  return frac >= 0.5 ? values[hi] - diff * (1 - frac) : values[lo] + diff * frac;
}

namespace {

// Optuna's _is_first_in_interval_step: no earlier report of this trial lies at or above the
// start of the interval `step` falls in, so this is the interval's first report.
bool first_in_interval(int64_t step, const std::map<int64_t, double>& reported,
                       int64_t warmup, int64_t interval) {
  const int64_t interval_start = (step - warmup) / interval * interval + warmup;
  int64_t before = -1;  // the latest earlier step reported
  for (const auto& [s, v] : reported)
    if (s != step) before = std::max(before, s);
  return before < interval_start;
}

}  // namespace

bool should_prune(const MedianPruner& pruner, const std::vector<TrialRecord>& trials,
                  const std::map<int64_t, double>& reported, Direction direction) {
  std::vector<const TrialRecord*> complete;
  for (const TrialRecord& r : trials)
    if (r.trial.state == TrialState::complete) complete.push_back(&r);
  if (complete.empty() || static_cast<int>(complete.size()) < pruner.n_startup_trials)
    return false;
  if (reported.empty()) return false;
  const int64_t step = reported.rbegin()->first;  // the trial's last step
  if (step < pruner.n_warmup_steps) return false;
  if (!first_in_interval(step, reported, pruner.n_warmup_steps, pruner.interval_steps))
    return false;

  const bool maximize = direction == Direction::maximize;
  double best = std::numeric_limits<double>::quiet_NaN();  // nanmax / nanmin of its reports
  for (const auto& [s, v] : reported)
    if (!std::isnan(v) && (std::isnan(best) || (maximize ? v > best : v < best))) best = v;
  if (std::isnan(best)) return true;  // it reported nothing but NaN

  std::vector<double> at_step;  // what the completed trials had reached at the same step
  for (const TrialRecord* r : complete)
    if (auto it = r->intermediate.find(step); it != r->intermediate.end())
      at_step.push_back(it->second);
  if (static_cast<int>(at_step.size()) < pruner.n_min_trials) return false;
  const double median = nan_percentile(at_step, 50.0);  // 100 − 50 when maximizing: the same
  if (std::isnan(median)) return false;
  return maximize ? best < median : best > median;
}

TrialPruned::TrialPruned(int64_t s, double v)
    : std::runtime_error(cat("[pruner] trial pruned at step ", s, " (value ", v, ")")),
      step(s),
      value(v) {}

Pruning::Pruning(Study& study, MedianPruner pruner) : study_(&study), pruner_(pruner) {
  pruner_.validate();
}

void Pruning::report(int64_t number, int64_t step, double value) const {
  study_->report(number, step, value);
  const std::vector<TrialRecord> trials = study_->trials();
  const auto self = std::find_if(trials.begin(), trials.end(), [&](const TrialRecord& r) {
    return r.trial.number == number;
  });
  MASE_CHECK(self != trials.end(), ConfigError, "[pruner] expected trial ", number, " in study '",
             study_->name(), "', got none");
  if (should_prune(pruner_, trials, self->intermediate, study_->direction()))
    throw TrialPruned(step, value);
}

void Pruning::record_final(int64_t number, int64_t step, double value) const {
  if (std::isfinite(value)) study_->report(number, step, value);
}

void check_prune_schedule(const MedianPruner& p, int64_t eval_every, int64_t max_steps) {
  MASE_CHECK(eval_every > 0, ConfigError, "[search] --pruner median expected --eval-every N > 0 "
             "(the accuracies it judges), got ", eval_every);
  if (max_steps <= 0) return;  // an epoch budget: its length is known once the data is
  MASE_CHECK(eval_every < max_steps, ConfigError, "[search] --pruner median expected --eval-every "
             "below --max-steps ", max_steps, " (only evaluations before the last step are "
             "judged), got ", eval_every);
  MASE_CHECK(p.n_warmup_steps < max_steps, ConfigError, "[search] --pruner median expected "
             "--prune-warmup below --max-steps ", max_steps, ", got ", p.n_warmup_steps,
             " (nothing would be judged)");
}

nlohmann::json pruner_key(const MedianPruner& p, int64_t eval_every) {
  return {{"name", "median"}, {"startup_trials", p.n_startup_trials},
          {"warmup_steps", p.n_warmup_steps}, {"eval_every", eval_every}};
}

std::optional<MedianPruner> parse_pruner(const std::string& name, int n_startup_trials,
                                         int64_t n_warmup_steps) {
  if (name == "none") return std::nullopt;
  MASE_CHECK(name == "median", ConfigError, "[pruner] expected --pruner none or median, got '",
             name, "'");
  MedianPruner p;
  p.n_startup_trials = n_startup_trials;
  p.n_warmup_steps = n_warmup_steps;
  p.validate();
  return p;
}

}  // namespace mase::search
