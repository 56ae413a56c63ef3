// search/pruner.h — stopping poor trials early: Optuna's MedianPruner (and PercentilePruner) here,
// its
// SuccessiveHalvingPruner and HyperbandPruner in search/halving.h, ThresholdPruner and
// PatientPruner's rule in search/curve_pruners.h, WilcoxonPruner in search/wilcoxon.h, and
// `Pruning`, which an objective calls with each evaluation, whichever of them judges it.
//
// A trial of an architecture search trains for --max-steps and is then tested. With
// --eval-every N it is also tested every N steps, and each accuracy is *reported* to the study
// (Study::report: Optuna's trial.report, the curve optuna-dashboard draws per trial). The
// pruner then asks: is this trial's best value so far worse than the median of what the
// finished trials had reached at the same step? If so the trial is stopped there — *pruned* —
// and the time it would have spent goes to the next trial. The rules, exactly Optuna's
// (optuna/pruners/_percentile.py, PercentilePruner at the 50th percentile):
//   - nothing is pruned before n_startup_trials trials have completed (pruned ones do not count),
//     nor at a step below n_warmup_steps, nor at a step that is not the first report in its
//     interval of interval_steps steps (counted from n_warmup_steps);
//   - the trial's best reported value so far (max when maximizing; NaN values skipped; all NaN
//     prunes) is compared with the median of the completed trials' values *at this step*
//     (numpy's nanpercentile: linear interpolation between the two middle values; fewer than
//     n_min_trials of them reported at this step: no pruning);
//   - pruned when it is strictly worse.
// Optuna's PercentilePruner is the same rule at another percentile p (`--pruner percentile
// --prune-percentile p`): the bar is the completed trials' p-th best percentile — numpy's
// nanpercentile at 100 − p when maximizing, at p when minimizing — so p = 25 keeps a trial only
// while it is in the top quarter, p = 50 is the median.
// A pruned trial keeps its last reported value as its value (Optuna does the same), counts as
// finished for --trials, is never the best trial, and TPE ranks it below every complete trial,
// by how far it got, then by that value (search/tpe.h).
//
//   auto pruning = std::make_shared<Pruning>(study, MedianPruner{});  // or a halving pruner
//   ... inside the objective, at each evaluation:  pruning->report(number, step, accuracy);
//       (throws TrialPruned when the trial should stop; the objective returns state pruned)
// Read next: search/lab_objectives.h (where the architecture trials report), search/tpe.h.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "search/curve_pruners.h"
#include "search/halving.h"
#include "search/study.h"
#include "search/wilcoxon.h"

namespace mase::search {

struct PercentilePruner {
  int n_startup_trials = 5;    // Optuna's defaults
  int64_t n_warmup_steps = 0;
  int64_t interval_steps = 1;
  int n_min_trials = 1;
  double percentile = 50;      // the median: Optuna's MedianPruner
  void validate() const;  // ConfigError: a negative count, interval_steps < 1, p outside [0, 100]
};
using MedianPruner = PercentilePruner;

// Optuna's PercentilePruner.prune: should the running trial that has reported
// `reported` (step -> value; its last step is the one being decided) stop now, given the
// study's `trials` (only the complete ones count)?
bool should_prune(const PercentilePruner& pruner, const std::vector<TrialRecord>& trials,
                  const std::map<int64_t, double>& reported, Direction direction);

// numpy.nanpercentile(values, q) with linear interpolation (NaNs dropped; NaN if none left).
double nan_percentile(std::vector<double> values, double q);

// Thrown by Pruning::report; the objective catches it and returns state pruned with `value`.
class TrialPruned : public std::runtime_error {
 public:
  TrialPruned(int64_t step, double value);
  int64_t step;
  double value;
};

// One of the pruners, with its settings.
struct PatientPruner;
// (std::vector of an incomplete type is allowed: PatientPruner holds the pruner it wraps.)
using PrunerConfig = std::variant<PercentilePruner, SuccessiveHalvingPruner, HyperbandPruner,
                                  ThresholdPruner, WilcoxonPruner, PatientPruner>;

// Optuna's PatientPruner: once a trial's curve has gone `patience` + 1 reports without
// improving by more than min_delta (patience_ran_out, search/curve_pruners.h), prune it — or,
// when it wraps a pruner, let that one decide; until then nothing is pruned (and a wrapped
// successive halving records no rung).
struct PatientPruner {
  int64_t patience = 0;
  double min_delta = 0;
  std::vector<PrunerConfig> wrapped;  // none, or the one pruner it asks
  void validate() const;              // ConfigError: negatives, more than one wrapped
};

// "median", "percentile", "halving", "hyperband", "threshold", "wilcoxon" or "patient" (the
// --pruner names; "patient(median)" for a patient pruner that wraps one).
std::string pruner_name(const PrunerConfig& pruner);

// Does this pruner compare values of instances (Wilcoxon's, alone or wrapped by a patient
// pruner: a step is a test batch, paired with the best trial's same batch), rather than a
// curve in time (every other pruner: a step is a point of training)?
bool judges_instances(const PrunerConfig& pruner);

// What Optuna's pruners work out once, from the first completed trial, and keep (per process
// here, as per pruner object there): "auto" min_resource of successive halving, "auto"
// max_resource and the brackets of Hyperband. 0 / empty until then.
struct PrunerMemo {
  int64_t resource = 0;
  std::vector<int64_t> budgets;
};

// The decision at a report, apart from the storage: should running trial `self` (its reports
// so far in self.intermediate, the last one being judged) stop, given the study's `trials` as
// read after the report, and which rungs did it reach (successive halving, Hyperband; none for
// the median pruner)? `study_name` picks Hyperband's bracket.
PruneDecision judge(const PrunerConfig& pruner, PrunerMemo& memo,
                      const std::vector<TrialRecord>& trials, const TrialRecord& self,
                      Direction direction, const std::string& study_name);

// What an objective calls at each evaluation of its trial: report, then prune or go on.
class Pruning {
 public:
  // `study` must outlive this (the lab commands' studies do: their slots are reloaded in place
  // after a fork, search/workers.h).
  Pruning(Study& study, PrunerConfig pruner);
  // Records `value` at `step` for running trial `number` (Study::report), asks the pruner
  // (judge), records the rungs it reached (Study::record_rung: the other workers' pruners read
  // them), and throws TrialPruned if it says stop.
  void report(int64_t number, int64_t step, double value) const;
  // Records a completed trial's final value at its last step, never pruning (a trial that
  // trained to the end is complete): each trial's curve then reaches its end.
  void record_final(int64_t number, int64_t step, double value) const;
  const PrunerConfig& pruner() const { return pruner_; }

 private:
  Study* study_;
  PrunerConfig pruner_;
  mutable PrunerMemo memo_;  // report() is const: an objective holds a shared_ptr<const ...>
};

// The --pruner flags of mase-search and its lab commands.
struct PruneOptions {
  // none, median, percentile, halving, hyperband, threshold, wilcoxon or patient
  std::string pruner = "none";
  int startup_trials = 5;       // median, percentile: completed trials before any is pruned
  int64_t warmup_steps = 0;     // median, percentile, threshold: steps before it can be pruned
  // halving, hyperband: the steps to rung 0 (-1: one evaluation, --eval-every; 0 for halving:
  // Optuna's "auto") and η (0: Optuna's default, 4 for halving, 3 for hyperband)
  int64_t min_resource = -1;
  int reduction_factor = 0;
  // threshold: prune a value below lower or above upper (at least one; --prune-warmup too)
  std::optional<double> lower{}, upper{};
  // patience (>= 0): `--pruner patient`, or any other pruner wrapped by Optuna's PatientPruner;
  // min_delta: the improvement that counts
  int64_t patience = -1;
  double min_delta = 0;
  std::optional<double> percentile{};  // percentile: the share of trials kept (required)
  double p_threshold = 0.1;    // wilcoxon: prune when p is below this
  int64_t startup_steps = 2;   // wilcoxon: paired steps before it judges
};

// The pruner the flags ask for (nullopt for "none"), for reports at steps of the objective's own
// choosing (`mase-search custom`: a command's epochs, say): halving and hyperband default to
// Optuna's min_resource ("auto" and 1). ConfigError naming the flag for an unknown name, a
// setting of another pruner, or a bad value.
std::optional<PrunerConfig> pruner_from_flags(const PruneOptions& flags);

// The same for trials that train and are tested every eval_every steps (the architecture search
// and its lab commands): halving and hyperband put rung 0 at the first evaluation unless told
// otherwise; checked against the evaluation schedule:
// ConfigError naming the flag for an unknown name, a setting of another pruner, bad values, or
// a schedule with nothing to judge — eval_every must be > 0 and, for a budget of max_steps > 0,
// below it, and median's warm-up below it too. `budget_flag` names max_steps in the messages
// (precision's QAT budget is --qat-steps).
std::optional<PrunerConfig> parse_pruner(const PruneOptions& flags, int64_t eval_every,
                                         int64_t max_steps,
                                         const char* budget_flag = "--max-steps");

// What a pruner adds to its study's objective key ("pruner": ..., search/lab_runner.h): pruned
// trials are results of the pruner as much as of the budget, so a --resume with other settings
// is refused.
nlohmann::json pruner_key(const PrunerConfig& pruner, int64_t eval_every);

}  // namespace mase::search
