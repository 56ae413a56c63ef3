// search/curve_pruners.h — pruners that judge a trial by its own curve alone: Optuna's
// ThresholdPruner and the rule of its PatientPruner (which pruner.h composes with the others).
//
// The median, halving and Wilcoxon pruners compare a trial with other trials. These two need
// none: they apply from the first trial on.
//   - Threshold: stop a trial whose latest value is NaN or outside [lower, upper] — a run that
//     diverged, or an accuracy still at chance after warm-up. Judged at the first report of
//     every interval of interval_steps steps after n_warmup_steps, as the median pruner is
//     (Optuna's _is_first_in_interval_step: first_in_interval below).
//   - Patience (early stopping): the best of the last patience + 1 reports is no better than the
//     best before them by more than min_delta — the curve has stopped improving. Optuna's
//     PatientPruner then prunes, or, when it wraps another pruner, asks that one (so a trial
//     that stalled is still kept if it stalled above the median, say). NaN values are skipped
//     (numpy's nanmax); a side that holds only NaN decides "keep".
// The rules, exactly Optuna's (optuna/pruners/_threshold.py, _patient.py); the "last step" is
// the largest step reported, as Optuna's trial.last_step.
// Tests: tests/search/test_more_pruners.cpp (hand cases; whole studies decided by Optuna 5.0).
#pragma once
#include <cstdint>
#include <limits>
#include <map>

#include "search/study.h"

namespace mase::search {

struct ThresholdPruner {
  double lower = -std::numeric_limits<double>::infinity();  // prune below (one of the two given)
  double upper = std::numeric_limits<double>::infinity();   // prune above
  int64_t n_warmup_steps = 0;
  int64_t interval_steps = 1;
  void validate() const;  // ConfigError: neither bound, lower > upper, NaN, bad counts
};

// Optuna's ThresholdPruner.prune on a trial's reports (step -> value).
bool should_prune(const ThresholdPruner& pruner, const std::map<int64_t, double>& reported);

// PatientPruner's question before it prunes (or asks the pruner it wraps): has the curve gone
// patience + 1 reports without beating its earlier best by more than min_delta?
bool patience_ran_out(int64_t patience, double min_delta,
                      const std::map<int64_t, double>& reported, Direction direction);

// Optuna's _is_first_in_interval_step: no earlier report of the trial lies at or above the
// start of the interval `step` falls in (intervals of `interval` steps from `warmup`).
bool first_in_interval(int64_t step, const std::map<int64_t, double>& reported, int64_t warmup,
                       int64_t interval);

}  // namespace mase::search
