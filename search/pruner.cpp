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

std::string pruner_name(const PrunerConfig& pruner) {
  const char* names[] = {"median", "halving", "hyperband"};
  return names[pruner.index()];
}

Pruning::Pruning(Study& study, PrunerConfig pruner) : study_(&study), pruner_(std::move(pruner)) {
  std::visit([](const auto& p) { p.validate(); }, pruner_);
}

PruneDecision judge(const PrunerConfig& pruner, PrunerMemo& memo,
                      const std::vector<TrialRecord>& trials, const TrialRecord& self,
                      Direction direction, const std::string& study_name) {
  if (const auto* median = std::get_if<MedianPruner>(&pruner))
    return {{}, should_prune(*median, trials, self.intermediate, direction)};

  // Successive halving: among every trial, or among the trials of this one's Hyperband bracket.
  SuccessiveHalvingPruner halving;
  const std::vector<TrialRecord>* competing = &trials;
  std::vector<TrialRecord> bracket_trials;
  if (const auto* sh = std::get_if<SuccessiveHalvingPruner>(&pruner)) {
    halving = *sh;
    if (halving.min_resource == 0) {  // "auto": worked out once a trial has completed
      if (memo.resource == 0) memo.resource = halving_min_resource(trials);
      if (memo.resource == 0) return {};
      halving.min_resource = memo.resource;
    }
  } else {
    const auto& hb = std::get<HyperbandPruner>(pruner);
    if (memo.budgets.empty()) {  // Optuna's _try_initialization: once, then kept
      if (memo.resource == 0)
        memo.resource = hb.max_resource > 0 ? hb.max_resource : hyperband_max_resource(trials);
      if (memo.resource == 0) return {};  // "auto", and no trial has completed yet
      memo.budgets = hyperband_budgets(hb, memo.resource);
      if (memo.budgets.empty()) return {};  // max_resource below min_resource: no bracket
    }
    const int bracket = hyperband_bracket(study_name, self.trial.number, memo.budgets);
    for (const TrialRecord& r : trials)
      if (hyperband_bracket(study_name, r.trial.number, memo.budgets) == bracket)
        bracket_trials.push_back(r);
    competing = &bracket_trials;
    halving = hyperband_bracket_pruner(hb, bracket);
  }
  return successive_halving(halving, *competing, self, direction);
}

void Pruning::report(int64_t number, int64_t step, double value) const {
  study_->report(number, step, value);
  const std::vector<TrialRecord> trials = study_->trials();
  const auto self = std::find_if(trials.begin(), trials.end(), [&](const TrialRecord& r) {
    return r.trial.number == number;
  });
  MASE_CHECK(self != trials.end(), ConfigError, "[pruner] expected trial ", number, " in study '",
             study_->name(), "', got none");
  const PruneDecision d =
      judge(pruner_, memo_, trials, *self, study_->direction(), study_->name());
  for (const auto& [rung, v] : d.rungs) study_->record_rung(number, rung, v);
  if (d.prune) throw TrialPruned(step, value);
}

void Pruning::record_final(int64_t number, int64_t step, double value) const {
  if (std::isfinite(value)) study_->report(number, step, value);
}

std::optional<PrunerConfig> pruner_from_flags(const PruneOptions& f) {
  if (f.pruner == "none") return std::nullopt;
  MASE_CHECK(f.pruner == "median" || f.pruner == "halving" || f.pruner == "hyperband",
             ConfigError, "[pruner] expected --pruner none, median, halving or hyperband, got '",
             f.pruner, "'");
  PrunerConfig out;
  if (f.pruner == "median") {
    MASE_CHECK(f.min_resource == -1 && f.reduction_factor == 0, ConfigError,
               "[search] --pruner median expected no --prune-min-resource or --prune-reduction, "
               "got one (they set --pruner halving and hyperband)");
    MedianPruner p;
    p.n_startup_trials = f.startup_trials;
    p.n_warmup_steps = f.warmup_steps;
    out = p;
  } else {
    MASE_CHECK(f.startup_trials == PruneOptions{}.startup_trials &&
                   f.warmup_steps == PruneOptions{}.warmup_steps,
               ConfigError, "[search] --pruner ", f.pruner, " expected no --prune-startup or "
               "--prune-warmup, got one (they set the median pruner; successive halving waits "
               "for its rungs: --prune-min-resource)");
    if (f.pruner == "halving") {
      SuccessiveHalvingPruner p;
      if (f.min_resource >= 0) p.min_resource = f.min_resource;
      if (f.reduction_factor) p.reduction_factor = f.reduction_factor;
      out = p;
    } else {
      HyperbandPruner p;
      if (f.min_resource >= 0) p.min_resource = f.min_resource;
      if (f.reduction_factor) p.reduction_factor = f.reduction_factor;
      out = p;
    }
  }
  std::visit([](const auto& p) { p.validate(); }, out);
  return out;
}

std::optional<PrunerConfig> parse_pruner(const PruneOptions& f, int64_t eval_every,
                                         int64_t max_steps) {
  PruneOptions flags = f;
  // rung 0 at the first evaluation unless told otherwise: the steps count training steps,
  // not epochs, so Optuna's defaults (auto, 1) would put several rungs before it
  if (flags.pruner != "median" && flags.min_resource < 0 && eval_every > 0)
    flags.min_resource = eval_every;
  std::optional<PrunerConfig> out = pruner_from_flags(flags);
  if (!out) return out;
  MASE_CHECK(eval_every > 0, ConfigError, "[search] --pruner ", f.pruner, " expected "
             "--eval-every N > 0 (the accuracies it judges), got ", eval_every);
  // (max_steps 0: an epoch budget, whose length is known once the data is)
  MASE_CHECK(max_steps <= 0 || eval_every < max_steps, ConfigError, "[search] --pruner ",
             f.pruner, " expected --eval-every below --max-steps ", max_steps, " (only "
             "evaluations before the last step are judged), got ", eval_every);
  MASE_CHECK(max_steps <= 0 || f.warmup_steps < max_steps, ConfigError, "[search] --pruner "
             "median expected --prune-warmup below --max-steps ", max_steps, ", got ",
             f.warmup_steps, " (nothing would be judged)");
  return out;
}

nlohmann::json pruner_key(const PrunerConfig& pruner, int64_t eval_every) {
  if (const auto* p = std::get_if<MedianPruner>(&pruner))
    return {{"name", "median"}, {"startup_trials", p->n_startup_trials},
            {"warmup_steps", p->n_warmup_steps}, {"eval_every", eval_every}};
  if (const auto* p = std::get_if<SuccessiveHalvingPruner>(&pruner))
    return {{"name", "halving"}, {"min_resource", p->min_resource},
            {"reduction_factor", p->reduction_factor},
            {"min_early_stopping_rate", p->min_early_stopping_rate},
            {"bootstrap_count", p->bootstrap_count}, {"eval_every", eval_every}};
  const auto& p = std::get<HyperbandPruner>(pruner);
  return {{"name", "hyperband"}, {"min_resource", p.min_resource},
          {"max_resource", p.max_resource}, {"reduction_factor", p.reduction_factor},
          {"bootstrap_count", p.bootstrap_count}, {"eval_every", eval_every}};
}

}  // namespace mase::search
