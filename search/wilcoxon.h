// search/wilcoxon.h — pruning a trial that is *statistically* worse than the best one: Optuna's
// WilcoxonPruner, and the Wilcoxon signed-rank test it stands on (SciPy's, re-derived here).
//
// The median and halving pruners (search/pruner.h, search/halving.h) watch a curve that
// improves with time: accuracy after more training. Some objectives are an *average over
// instances* instead — a quantized model's accuracy over the batches of a test set (the
// precision search), a solver's cost over benchmark problems. There each report is one
// instance's value (step = the instance's id), and the question is "after the instances seen so
// far, is this trial clearly worse than the best trial was on the same instances?" The signed-
// rank test answers it from the paired differences d_i = value_i − best_value_i:
//   - rank the |d_i| (ties get their average rank); W+ = the sum of the ranks of the positive
//     d_i, half the ranks of the zero ones added to each side (zero_method "zsplit");
//   - if the trial were as good as the best, each d_i would be as likely positive as negative,
//     so W+ would be distributed as the sum of a random subset of the ranks; the p-value is the
//     chance of a W+ at least this unfavourable under that null ("less" when maximizing);
//   - SciPy's "auto" method, followed exactly: n > 50 — the normal approximation (mean
//     n(n+1)/4, variance (n(n+1)(2n+1) − Σ(t³ − t)/2) / 24 for tie groups of size t, no
//     continuity correction); n <= 50 with no ties or zeros — the exact null distribution
//     (a counting recursion over the ranks); n <= 13 otherwise — every one of the 2^n sign
//     flips enumerated (SciPy's permutation test, exact there); else the normal approximation.
// The pruner's rule, exactly Optuna's (optuna/pruners/_wilcoxon.py): no decision before the
// study has a best trial, with the trial and the best trial's reports all finite, and at least
// max(2, n_startup_steps) steps in common; prune when p < p_threshold — unless this trial's
// mean report is at least as good as the best trial's (then the test says it is *better*).
//
// A pruned trial keeps its last report as its value (as with every pruner); an objective that
// wants the mean so far records it itself (the precision search does: accuracy_so_far).
// Tests: tests/search/test_more_pruners.cpp (SciPy's p-values for 400 samples; 100 whole
// studies decided by Optuna 5.0). Read next: search/pruner.h (the PrunerConfig it joins).
#pragma once
#include <cstdint>
#include <vector>

#include "search/study.h"

namespace mase::search {

struct WilcoxonPruner {
  double p_threshold = 0.1;     // Optuna's defaults
  int64_t n_startup_steps = 2;  // paired steps before any decision (at least 2 in any case)
  void validate() const;        // ConfigError: p outside [0, 1], negative steps
};

enum class Alternative { less, greater };

// scipy.stats.wilcoxon(d, zero_method="zsplit", alternative=...).pvalue for finite d of size
// >= 2 (SciPy's "auto" method: see above; ConfigError otherwise). NaN where the test has nothing
// to say (every d zero and n > 13).
double signed_rank_p(const std::vector<double>& d, Alternative alternative);

// Optuna's WilcoxonPruner.prune for running trial `self` (its reports in self.intermediate)
// against the best complete trial of `trials` (best_complete, search/study.h).
bool should_prune(const WilcoxonPruner& pruner, const std::vector<TrialRecord>& trials,
                  const TrialRecord& self, Direction direction);

}  // namespace mase::search
