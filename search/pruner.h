// search/pruner.h — stopping poor trials early: Optuna's MedianPruner.
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
// A pruned trial keeps its last reported value as its value (Optuna does the same), counts as
// finished for --trials, is never the best trial, and TPE ranks it below every complete trial,
// by how far it got, then by that value (search/tpe.h).
//
//   auto pruning = std::make_shared<Pruning>(study, MedianPruner{});
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
#include <vector>

#include "search/study.h"

namespace mase::search {

struct MedianPruner {
  int n_startup_trials = 5;    // Optuna's defaults
  int64_t n_warmup_steps = 0;
  int64_t interval_steps = 1;
  int n_min_trials = 1;
  void validate() const;       // ConfigError for a negative count or interval_steps < 1
};

// Optuna's PercentilePruner(50).prune: should the running trial that has reported
// `reported` (step -> value; its last step is the one being decided) stop now, given the
// study's `trials` (only the complete ones count)?
bool should_prune(const MedianPruner& pruner, const std::vector<TrialRecord>& trials,
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

// What an objective calls at each evaluation of its trial: report, then prune or go on.
class Pruning {
 public:
  // `study` must outlive this (the lab commands' studies do: their slots are reloaded in place
  // after a fork, search/workers.h).
  Pruning(Study& study, MedianPruner pruner);
  // Records `value` at `step` for running trial `number` (Study::report), then throws
  // TrialPruned if should_prune says so.
  void report(int64_t number, int64_t step, double value) const;
  // Records a completed trial's final value at its last step, never pruning (a trial that
  // trained to the end is complete): each trial's curve then reaches its end.
  void record_final(int64_t number, int64_t step, double value) const;
  const MedianPruner& pruner() const { return pruner_; }

 private:
  Study* study_;
  MedianPruner pruner_;
};

// A pruner judges the evaluations before a trial's last step: ConfigError naming the flags
// unless eval_every > 0 and, for a budget of max_steps > 0, some evaluation falls before it
// and after the warm-up (eval_every < max_steps, warmup_steps < max_steps).
void check_prune_schedule(const MedianPruner& pruner, int64_t eval_every, int64_t max_steps);

// What a pruner adds to its study's objective key ("pruner": ..., search/lab_runner.h): pruned
// trials are results of the pruner as much as of the budget, so a --resume with other settings
// is refused.
nlohmann::json pruner_key(const MedianPruner& pruner, int64_t eval_every);

// "median" -> a MedianPruner with these settings; "none" -> nullopt; ConfigError otherwise.
std::optional<MedianPruner> parse_pruner(const std::string& name, int n_startup_trials,
                                         int64_t n_warmup_steps);

}  // namespace mase::search
