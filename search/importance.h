// search/importance.h — which parameters mattered: Optuna's get_param_importances with its
// default evaluator in 5.0, PED-ANOVA (Watanabe et al., IJCAI 2023), what optuna-dashboard's
// "Hyperparameter Importance" chart and `mase-search importance` show.
//
// The question PED-ANOVA answers: to get into the top 10% of the trials, how much did each
// parameter have to be pinned down? For each parameter it compares two densities over that
// parameter's range — of the top-10% trials ("target", γ' = 0.1) and of all the complete
// trials ("region", γ = 1) — and measures how far apart they are with the Pearson divergence
//   D = Σ_x p_region(x) · (p_top(x) / p_region(x) − 1)²
// A parameter the good trials spread over as freely as everyone else scores 0; one they all
// share scores high. Then importance = (γ'/γ)² · D, normalised to sum to 1 (Optuna's
// normalize=True; all 1/n when every D is 0).
// The densities, exactly Optuna's (optuna/importance/_ped_anova/):
//   - a numerical parameter is binned onto a grid of at most 50 points over [low, high] (log
//     scale for log parameters; an integer one has at most high − low + 1 points, a log integer
//     one ⌈log2(high − low + 1)⌉ + 1), each trial rounded to its nearest point;
//   - on the grid, a Parzen estimator with one kernel per occupied point weighted by its count
//     plus a prior kernel of weight 1 at the middle with width (G − 1) + 1, the kernels' width
//     by Scott's rule, 1.059 · min(IQR / 1.34, σ) · n^−0.2, at least 0.5 / 1.64, each kernel a
//     normal's mass over the point's unit bin, truncated to the grid;
//   - a categorical parameter: one kernel per chosen category weighted by its count (each
//     kernel puts 1 on its category plus prior / (k + 1) spread over all, renormalised) plus a
//     uniform prior kernel of weight 1;
//   - the top trials: those whose value is at or better than the ⌈0.1 · n⌉-th best (ties kept).
// Studies of several objectives take their top trials as TPE does (non-domination ranks, the
// last rank cut by hypervolume: search/tpe.h); only complete trials with finite values count.
// Tests: tests/search/test_importance.cpp (hand-worked divergences, and Optuna 5.0's own
// importances on 120 random studies). Read next: search/tpe.h (the Parzen estimators of TPE).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "search/space.h"
#include "search/study.h"

namespace mase::search {

struct ImportanceOptions {
  double target_quantile = 0.1;  // γ': the top trials whose parameters are looked at
  double region_quantile = 1.0;  // γ: the trials they are compared with (1: all)
  bool normalize = true;         // importances sum to 1
};

// Each parameter of `space` with its importance, most important first (ties by name), from the
// complete trials of a study with these directions. ConfigError unless 0 < target < region <= 1.
// Fewer than 2 trials: every importance 0 (1/n normalised), as Optuna's.
std::vector<std::pair<std::string, double>> param_importances(
    const std::vector<TrialRecord>& trials, const Space& space,
    const std::vector<Direction>& directions, const ImportanceOptions& options = {});

// The Pearson divergence D of `top` from `region` for one parameter (internal values: the
// category's index, or the number), each set non-empty and `top` inside the parameter's range.
double ped_anova_divergence(const Param& param, const std::vector<double>& top,
                            const std::vector<double>& region);

}  // namespace mase::search
