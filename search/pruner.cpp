// search/pruner.cpp — Optuna's MedianPruner and PercentilePruner, the report-then-prune call of
// an objective, and the --pruner flags.
// Read search/pruner.h first (the rules, in order).
#include "search/pruner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace mase::search {

void PercentilePruner::validate() const {
  MASE_CHECK(n_startup_trials >= 0, ConfigError, "[pruner] expected n_startup_trials >= 0, got ",
             n_startup_trials);
  MASE_CHECK(n_warmup_steps >= 0, ConfigError, "[pruner] expected n_warmup_steps >= 0, got ",
             n_warmup_steps);
  MASE_CHECK(interval_steps >= 1, ConfigError, "[pruner] expected interval_steps >= 1, got ",
             interval_steps);
  MASE_CHECK(n_min_trials >= 1, ConfigError, "[pruner] expected n_min_trials >= 1, got ",
             n_min_trials);
  MASE_CHECK(percentile >= 0 && percentile <= 100, ConfigError,
             "[pruner] expected a percentile in [0, 100], got ", percentile);
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

bool should_prune(const PercentilePruner& pruner, const std::vector<TrialRecord>& trials,
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
  // the p-th best: from the top when maximizing
  const double q = maximize ? 100 - pruner.percentile : pruner.percentile;
  const double bar = nan_percentile(at_step, q);
  if (std::isnan(bar)) return false;
  return maximize ? best < bar : best > bar;
}

TrialPruned::TrialPruned(int64_t s, double v)
    : std::runtime_error(cat("[pruner] trial pruned at step ", s, " (value ", v, ")")),
      step(s),
      value(v) {}

void PatientPruner::validate() const {
  MASE_CHECK(patience >= 0, ConfigError, "[pruner] expected patience >= 0, got ", patience);
  MASE_CHECK(min_delta >= 0, ConfigError, "[pruner] expected min_delta >= 0, got ", min_delta);
  MASE_CHECK(wrapped.size() <= 1, ConfigError, "[pruner] a patient pruner wraps one pruner or "
             "none, got ", wrapped.size());
  for (const PrunerConfig& w : wrapped) std::visit([](const auto& p) { p.validate(); }, w);
}

std::string pruner_name(const PrunerConfig& pruner) {
  const char* names[] = {"median", "halving", "hyperband", "threshold", "wilcoxon", "patient"};
  if (const auto* p = std::get_if<PatientPruner>(&pruner); p && !p->wrapped.empty())
    return cat("patient(", pruner_name(p->wrapped[0]), ")");
  if (const auto* p = std::get_if<PercentilePruner>(&pruner); p && p->percentile != 50)
    return "percentile";
  return names[pruner.index()];
}

bool judges_instances(const PrunerConfig& pruner) {
  if (const auto* p = std::get_if<PatientPruner>(&pruner); p && !p->wrapped.empty())
    return judges_instances(p->wrapped[0]);
  return std::holds_alternative<WilcoxonPruner>(pruner);
}

Pruning::Pruning(Study& study, PrunerConfig pruner) : study_(&study), pruner_(std::move(pruner)) {
  std::visit([](const auto& p) { p.validate(); }, pruner_);
}

PruneDecision judge(const PrunerConfig& pruner, PrunerMemo& memo,
                      const std::vector<TrialRecord>& trials, const TrialRecord& self,
                      Direction direction, const std::string& study_name) {
  if (const auto* percentile = std::get_if<PercentilePruner>(&pruner))
    return {{}, should_prune(*percentile, trials, self.intermediate, direction)};
  if (const auto* threshold = std::get_if<ThresholdPruner>(&pruner))
    return {{}, should_prune(*threshold, self.intermediate)};
  if (const auto* wilcoxon = std::get_if<WilcoxonPruner>(&pruner))
    return {{}, should_prune(*wilcoxon, trials, self, direction)};
  if (const auto* patient = std::get_if<PatientPruner>(&pruner)) {
    if (!patience_ran_out(patient->patience, patient->min_delta, self.intermediate, direction))
      return {};
    if (patient->wrapped.empty()) return {{}, true};
    return judge(patient->wrapped[0], memo, trials, self, direction, study_name);
  }

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

namespace {

// Each --prune-* setting: whether it was given (differs from its default) and the pruners it
// sets. A setting given to another pruner is refused by name, not ignored.
struct PruneSetting {
  const char* flag;
  bool given;
  std::vector<std::string> pruners;
};

void check_settings(const PruneOptions& f) {
  const PruneOptions d;
  const PruneSetting settings[] = {
      {"--prune-startup", f.startup_trials != d.startup_trials, {"median", "percentile"}},
      {"--prune-warmup", f.warmup_steps != d.warmup_steps, {"median", "percentile", "threshold"}},
      {"--prune-percentile", f.percentile.has_value(), {"percentile"}},
      {"--prune-min-resource", f.min_resource != d.min_resource, {"halving", "hyperband"}},
      {"--prune-reduction", f.reduction_factor != d.reduction_factor, {"halving", "hyperband"}},
      {"--prune-lower", f.lower.has_value(), {"threshold"}},
      {"--prune-upper", f.upper.has_value(), {"threshold"}},
      {"--prune-p", f.p_threshold != d.p_threshold, {"wilcoxon"}},
      {"--prune-startup-steps", f.startup_steps != d.startup_steps, {"wilcoxon"}},
  };
  for (const PruneSetting& s : settings) {
    const bool its_own = std::ranges::find(s.pruners, f.pruner) != s.pruners.end();
    std::string owners = s.pruners[0];  // "a", "a or b", "a, b or c"
    for (size_t i = 1; i < s.pruners.size(); ++i)
      owners += (i + 1 == s.pruners.size() ? " or " : ", ") + s.pruners[i];
    MASE_CHECK(!s.given || its_own, ConfigError, "[search] --pruner ", f.pruner, " expected no ",
               s.flag, ", got one (it sets --pruner ", owners, ")");
  }
  MASE_CHECK(f.min_delta == 0 || f.patience >= 0, ConfigError, "[search] --prune-min-delta "
             "expected --prune-patience N too (the improvement patience counts), got none");
}

}  // namespace

std::optional<PrunerConfig> pruner_from_flags(const PruneOptions& f) {
  if (f.pruner == "none") {
    MASE_CHECK(f.patience < 0, ConfigError, "[search] --prune-patience expected a pruner "
               "(--pruner patient, or one it wraps), got --pruner none");
    return std::nullopt;
  }
  const std::vector<std::string> names = {"median", "percentile", "halving", "hyperband",
                                          "threshold", "wilcoxon", "patient"};
  MASE_CHECK(std::ranges::find(names, f.pruner) != names.end(), ConfigError,
             "[pruner] expected --pruner none, median, percentile, halving, hyperband, threshold, "
             "wilcoxon or patient, got '", f.pruner, "'");
  check_settings(f);
  PrunerConfig out;
  if (f.pruner == "median" || f.pruner == "percentile") {
    MASE_CHECK(f.pruner == "median" || f.percentile, ConfigError, "[search] --pruner percentile "
               "expected --prune-percentile P (trials kept while in the top P%), got none");
    PercentilePruner p;
    p.n_startup_trials = f.startup_trials;
    p.n_warmup_steps = f.warmup_steps;
    if (f.percentile) p.percentile = *f.percentile;
    out = p;
  } else if (f.pruner == "halving") {
    SuccessiveHalvingPruner p;
    if (f.min_resource >= 0) p.min_resource = f.min_resource;
    if (f.reduction_factor) p.reduction_factor = f.reduction_factor;
    out = p;
  } else if (f.pruner == "hyperband") {
    HyperbandPruner p;
    if (f.min_resource >= 0) p.min_resource = f.min_resource;
    if (f.reduction_factor) p.reduction_factor = f.reduction_factor;
    out = p;
  } else if (f.pruner == "threshold") {
    ThresholdPruner p;
    if (f.lower) p.lower = *f.lower;
    if (f.upper) p.upper = *f.upper;
    p.n_warmup_steps = f.warmup_steps;
    out = p;
  } else if (f.pruner == "wilcoxon") {
    out = WilcoxonPruner{f.p_threshold, f.startup_steps};
  } else {
    MASE_CHECK(f.patience >= 0, ConfigError, "[search] --pruner patient expected "
               "--prune-patience N (reports without improvement before it prunes), got none");
  }
  // --prune-patience wraps the pruner asked for (or is the whole of --pruner patient)
  if (f.patience >= 0) {
    PatientPruner patient{f.patience, f.min_delta, {}};
    if (f.pruner != "patient") patient.wrapped.push_back(out);
    out = patient;
  }
  std::visit([](const auto& p) { p.validate(); }, out);
  return out;
}

std::optional<PrunerConfig> parse_pruner(const PruneOptions& f, int64_t eval_every,
                                         int64_t max_steps, const char* budget_flag) {
  PruneOptions flags = f;
  // rung 0 at the first evaluation unless told otherwise: the steps count training steps,
  // not epochs, so Optuna's defaults (auto, 1) would put several rungs before it
  if ((flags.pruner == "halving" || flags.pruner == "hyperband") && flags.min_resource < 0 &&
      eval_every > 0)
    flags.min_resource = eval_every;
  std::optional<PrunerConfig> out = pruner_from_flags(flags);
  if (!out) return out;
  MASE_CHECK(eval_every > 0, ConfigError, "[search] --pruner ", f.pruner, " expected "
             "--eval-every N > 0 (the accuracies it judges), got ", eval_every);
  // (max_steps 0: an epoch budget, whose length is known once the data is)
  MASE_CHECK(max_steps <= 0 || eval_every < max_steps, ConfigError, "[search] --pruner ",
             f.pruner, " expected --eval-every below ", budget_flag, " ", max_steps, " (only "
             "evaluations before the last step are judged), got ", eval_every);
  MASE_CHECK(max_steps <= 0 || f.warmup_steps < max_steps, ConfigError, "[search] --pruner ",
             f.pruner, " expected --prune-warmup below ", budget_flag, " ", max_steps, ", got ",
             f.warmup_steps, " (nothing would be judged)");
  const bool rungs = flags.pruner == "halving" || flags.pruner == "hyperband";
  MASE_CHECK(!rungs || max_steps <= 0 || flags.min_resource < max_steps, ConfigError,
             "[search] --pruner ", f.pruner, " expected --prune-min-resource below ", budget_flag,
             " ", max_steps, " (the first rung), got ", flags.min_resource,
             " (no trial would reach a rung: nothing would be judged)");
  return out;
}

nlohmann::json pruner_key(const PrunerConfig& pruner, int64_t eval_every) {
  if (const auto* p = std::get_if<PercentilePruner>(&pruner)) {
    nlohmann::json k = {{"name", "median"}, {"startup_trials", p->n_startup_trials},
                        {"warmup_steps", p->n_warmup_steps}, {"eval_every", eval_every}};
    if (p->percentile != 50) {  // the median's key as it always was (--resume compares keys)
      k["name"] = "percentile";
      k["percentile"] = p->percentile;
    }
    return k;
  }
  if (const auto* p = std::get_if<SuccessiveHalvingPruner>(&pruner))
    return {{"name", "halving"}, {"min_resource", p->min_resource},
            {"reduction_factor", p->reduction_factor},
            {"min_early_stopping_rate", p->min_early_stopping_rate},
            {"bootstrap_count", p->bootstrap_count}, {"eval_every", eval_every}};
  if (const auto* p = std::get_if<HyperbandPruner>(&pruner))
    return {{"name", "hyperband"}, {"min_resource", p->min_resource},
            {"max_resource", p->max_resource}, {"reduction_factor", p->reduction_factor},
            {"bootstrap_count", p->bootstrap_count}, {"eval_every", eval_every}};
  if (const auto* p = std::get_if<ThresholdPruner>(&pruner)) {
    nlohmann::json k = {{"name", "threshold"}, {"warmup_steps", p->n_warmup_steps},
                        {"interval_steps", p->interval_steps}, {"eval_every", eval_every}};
    if (std::isfinite(p->lower)) k["lower"] = p->lower;  // JSON has no infinity
    if (std::isfinite(p->upper)) k["upper"] = p->upper;
    return k;
  }
  if (const auto* p = std::get_if<WilcoxonPruner>(&pruner))
    return {{"name", "wilcoxon"}, {"p_threshold", p->p_threshold},
            {"startup_steps", p->n_startup_steps}, {"eval_every", eval_every}};
  const auto& p = std::get<PatientPruner>(pruner);
  return {{"name", "patient"}, {"patience", p.patience}, {"min_delta", p.min_delta},
          {"wraps", p.wrapped.empty() ? nlohmann::json() : pruner_key(p.wrapped[0], eval_every)},
          {"eval_every", eval_every}};
}

}  // namespace mase::search
