// search/halving.h — stopping poor trials early by successive halving: Optuna's
// SuccessiveHalvingPruner (asynchronous successive halving, ASHA) and HyperbandPruner.
//
// The median pruner (search/pruner.h) compares a trial with the median of the completed
// trials at every evaluation. Successive halving instead sets *rungs*: training steps
// r0 = min_resource · η^s, r1 = r0 · η, r2 = r0 · η², ... (η = reduction_factor, s =
// min_early_stopping_rate). When a trial first reports at or beyond a rung's step it records
// that value as its result at the rung — the trial system attribute "completed_rung_<k>",
// shared through the study storage with every worker — and goes on only if the value is in
// the top 1/η of all the values recorded at that rung so far (its own included); else it is
// pruned. So about 1/η of the trials pass each rung, and a search of N trials spends most of
// its steps on the best N/η^k. The rules, exactly Optuna's
// (optuna/pruners/_successive_halving.py):
//   - the value judged is the trial's value at its last reported step (not its best so far);
//     NaN is pruned as soon as the step reaches a rung;
//   - one report can pass several rungs (a first report at step 100 with rungs at 1, 4, 16,
//     64 competes at each in turn with the same value);
//   - with n values at a rung (this trial's included) the trial passes if it is at least the
//     (⌊n/η⌋)-th best (maximizing: value >= sorted[n - ⌊n/η⌋]; fewer than η values: it must be
//     the best so far — Optuna cannot pause a trial to wait for company);
//   - with bootstrap_count b, a trial is pruned at a rung that holds b values or fewer;
//   - min_resource 0 is Optuna's "auto": once a trial has completed, the longest complete
//     trial's last step / 100 (at least 1), fixed from then on; nothing is pruned before.
//   - every trial that recorded a rung competes there, whatever its state now (complete,
//     pruned, failed or running), as in Optuna.
//
// Hyperband runs several successive-halving *brackets* side by side, s = 0 .. n−1 (bracket s
// starts its rungs η^s later: more patient), and deals each trial to one bracket by a hash of
// "<study name>_<trial number>" (zlib's crc32, Optuna's binascii.crc32) weighted by
// ⌈n · η^(n−1−s) / (n − s)⌉ trials per bracket; a trial competes only with its own bracket's.
// n = ⌊log_η(max_resource / min_resource)⌋ + 1, max_resource "auto" (0 here) being the
// longest complete trial's last step + 1 (Optuna's: nothing pruned before one completes).
// (Optuna's HyperbandPruner; its TPE sampler sees every trial, as ours does.)
//
//   Pruning pruning(study, SuccessiveHalvingPruner{.min_resource = 25, .reduction_factor = 3});
// Tests: tests/search/test_halving.cpp (hand-worked rungs, and 250 whole studies replayed from
// Optuna 5.0 itself). Read next: search/pruner.h (Pruning, which calls these).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "search/study.h"

namespace mase::search {

struct SuccessiveHalvingPruner {
  int64_t min_resource = 0;         // steps to rung 0 (before η^s); 0 = "auto" (Optuna's default)
  int reduction_factor = 4;         // η: about 1 in η passes each rung
  int min_early_stopping_rate = 0;  // s: rung 0 at min_resource · η^s
  int bootstrap_count = 0;          // a rung with this many values or fewer prunes
  void validate() const;  // ConfigError: η < 2, negatives, bootstrap with "auto"
};

struct HyperbandPruner {
  int64_t min_resource = 1;  // Optuna's defaults
  int64_t max_resource = 0;  // 0 = "auto": the longest complete trial's last step + 1
  int reduction_factor = 3;
  int bootstrap_count = 0;
  void validate() const;
};

// What a pruner decided at one report: whether the trial stops and, for successive halving,
// the rungs it passed or reached at this report ({rung, value}, in order: to record as
// "completed_rung_<rung>", the failing one included).
struct PruneDecision {
  std::vector<std::pair<int, double>> rungs;
  bool prune = false;
};

// Optuna's SuccessiveHalvingPruner.prune for the running trial `self` (its reports in
// self.intermediate, its rungs so far in self.rungs) against `trials` — the trials that
// compete (for Hyperband, its bracket's), as read before this report's rungs are recorded.
// pruner.min_resource must be resolved: "auto" (0) decides nothing (halving_min_resource).
PruneDecision successive_halving(const SuccessiveHalvingPruner& pruner,
                                   const std::vector<TrialRecord>& trials,
                                   const TrialRecord& self, Direction direction);

// "auto": max(longest complete trial's last step / 100, 1); 0 while no trial has completed.
int64_t halving_min_resource(const std::vector<TrialRecord>& trials);

// Hyperband's brackets for a max_resource resolved (> 0): the number of each one's trials in
// the weighting, in bracket order.
std::vector<int64_t> hyperband_budgets(const HyperbandPruner& pruner, int64_t max_resource);
// "auto": the longest complete trial's last step + 1; 0 while no trial has completed.
int64_t hyperband_max_resource(const std::vector<TrialRecord>& trials);
// The bracket of trial `number` of study `study_name`: crc32("<name>_<number>") mod the sum of
// the budgets, counted off bracket by bracket.
int hyperband_bracket(const std::string& study_name, int64_t number,
                      const std::vector<int64_t>& budgets);
// Bracket s's successive halving: Hyperband's min_resource, η and bootstrap, and s.
SuccessiveHalvingPruner hyperband_bracket_pruner(const HyperbandPruner& pruner, int bracket);

}  // namespace mase::search
