// search/tpe_multi.cpp — TPE for a study of several objectives (Optuna's MOTPE): which trials
// are the good ones when there is no single value to sort by.
//
// Read search/tpe.h first. Everything else in TPE stays as it is: l(x) is fitted to the good
// trials, g(x) to the bad ones, the candidate with the largest l/g wins. What several objectives
// change is the split (Optuna 5.0's _split_trials with _split_complete_trials_multi_objective;
// Ozaki et al., "Multiobjective Tree-Structured Parzen Estimator", JAIR 2022):
//   how many  gamma(n) = ceil(0.1 n) good trials, without the cap of 25 (more of the front is
//             worth modelling; Optuna's default_gamma_multiobjective);
//   which     the complete trials, as losses (maximized objectives negated), are sorted into
//             non-domination ranks (search/nsga2.h: rank 0 is the Pareto front, rank 1 the
//             front of what remains, ...); whole ranks are good while they fit, and the rank
//             that does not fit is cut by hypervolume subset selection — of its points, the
//             ones that together dominate the most (search/hypervolume.h), against the
//             reference point just beyond that rank's worst losses. A front is kept spread out,
//             not bunched where one objective is good;
//   the rest  pruned trials (which keep no values with several objectives, and cannot report:
//             Optuna's ranking of them by last report gives them all the same score) top the
//             good group up in trial order if the complete ones are too few; running ones
//             are bad (the constant liar), as with one objective;
//   weights   the good trials' kernels all weigh 1 (the front has no "old" and "new" worth
//             telling apart); the bad ones keep default_weights (tpe.h).
// And the sampler: Optuna's default TPESampler() (multivariate=None) is multivariate for one
// objective but *independent* for several, so "tpe" samples parameter by parameter here,
// exactly as "tpe-independent" does (tpe.cpp, TpeSampler::sample).
// A complete trial without a value for every objective (never in a study mase writes) is left
// out, as a NaN value is with one objective. tests/search/test_tpe_multi.cpp checks the split
// on 243 studies made by Optuna (tests/fixtures/search/motpe.json).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/error.h"
#include "search/hypervolume.h"
#include "search/nsga2.h"
#include "search/tpe.h"

namespace mase::search {

int tpe_gamma_multi(int n) { return (std::max(n, 0) + 9) / 10; }  // ceil(0.1 n), as Optuna's

std::vector<size_t> good_positions(const std::vector<hv::Losses>& loss, size_t n_below) {
  std::vector<size_t> good;
  if (n_below == 0) return good;
  // Ranks as Optuna finds them (hv::nondomination_ranks: one pass a rank over the distinct
  // losses in lexicographic order), only as far as n_below needs.
  const std::vector<int> rank_of = hv::nondomination_ranks(loss, n_below);
  // Whole ranks (members in trial order) while they fit; the next one is cut below.
  for (int r = 0; good.size() < n_below; ++r) {
    std::vector<size_t> rank;
    for (size_t i = 0; i < loss.size(); ++i)
      if (rank_of[i] == r) rank.push_back(i);
    if (good.size() + rank.size() <= n_below) {  // fits whole
      good.insert(good.end(), rank.begin(), rank.end());
      continue;
    }
    // The rank that does not fit: keep the n_below - |good| of it that dominate the most.
    std::vector<hv::Losses> points;
    for (size_t i : rank) points.push_back(loss[i]);
    const std::vector<size_t> kept =
        hv::hssp(points, rank, n_below - good.size(), hv::reference_point(points));
    good.insert(good.end(), kept.begin(), kept.end());
  }
  return good;
}

TpeSplit tpe_split(const std::vector<Trial>& history, bool constant_liar,
                   const std::vector<Direction>& directions) {
  MASE_CHECK(directions.size() >= 2, ConfigError, "[tpe] tpe_split expected several directions, "
             "got ", directions.size(), " (one objective: tpe_split(history, constant_liar))");
  TpeSplit out;
  std::vector<const Trial*> done, pruned, infeasible;  // infeasible: as in tpe.cpp's split
  for (const Trial& t : history) {
    const bool finished = t.state == TrialState::complete || t.state == TrialState::pruned;
    if (finished && violation(t) > 0)
      infeasible.push_back(&t);
    else if (t.state == TrialState::complete &&
             nsga2::has_every_value(t.objectives, directions.size()))
      done.push_back(&t);
    else if (t.state == TrialState::pruned)
      pruned.push_back(&t);
    if (t.state == TrialState::running && constant_liar) out.bad.push_back(&t);
  }
  out.n_complete = done.size() + pruned.size() + infeasible.size();
  const size_t n_below = static_cast<size_t>(tpe_gamma_multi(static_cast<int>(out.n_complete)));

  std::vector<hv::Losses> loss;  // as Optuna's lvals: maximized objectives times -1
  for (const Trial* t : done) {
    hv::Losses l(directions.size());
    for (size_t d = 0; d < l.size(); ++d)
      l[d] = t->objectives[d] * (directions[d] == Direction::maximize ? -1.0 : 1.0);
    loss.push_back(std::move(l));
  }
  std::vector<bool> good(done.size(), false);
  for (size_t i : good_positions(loss, std::min(n_below, done.size()))) good[i] = true;
  for (size_t i = 0; i < done.size(); ++i) (good[i] ? out.good : out.bad).push_back(done[i]);
  // Pruned trials fill what is left of n_below, oldest first (all tie: see the header).
  const size_t from_pruned = std::min(n_below - std::min(n_below, done.size()), pruned.size());
  out.good.insert(out.good.end(), pruned.begin(), pruned.begin() + static_cast<std::ptrdiff_t>(from_pruned));
  out.bad.insert(out.bad.end(), pruned.begin() + static_cast<std::ptrdiff_t>(from_pruned), pruned.end());
  fill_with_infeasible(out, infeasible, n_below);
  auto by_number = [](const Trial* a, const Trial* b) { return a->number < b->number; };
  std::sort(out.good.begin(), out.good.end(), by_number);
  std::sort(out.bad.begin(), out.bad.end(), by_number);
  return out;
}

}  // namespace mase::search
