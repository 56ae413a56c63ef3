// search/hypervolume.h — hypervolume of any number of objectives, and hypervolume subset
// selection: how TPE of several objectives picks the good trials of a front that does not fit.
//
// Everything here works on *losses*: every objective minimized (a maximized one negated), a
// point a vector of losses. The hypervolume of a set of points against a reference point r is
// the volume of the region they dominate inside the box below r,
//   HV(S) = vol( union over s in S of [s_1, r_1] x ... x [s_d, r_d] ),
// the one number that says how good and how spread a front is: it grows when a point moves
// down or a new one fills a gap. This is Optuna 5.0's optuna/_hypervolume: wfg.py (2
// objectives: a sweep; 3: an O(n^2) grid of cumulative maxima; more: the WFG recursion of While
// et al., "A Fast Way of Calculating Exact Hypervolumes", IEEE TEC 2012) and hssp.py.
//
// Hypervolume subset selection (HSSP): of a set of points, the k whose hypervolume is largest.
// Exact HSSP is NP-hard beyond 2 objectives, so Optuna (and mase) take the greedy 1 - 1/e
// approximation (Guerreiro et al., "Greedy Hypervolume Subset Selection in Low Dimensions",
// Evolutionary Computation 2016): k times, add the point whose contribution HV(S + p) - HV(S)
// is largest. Two objectives: each contribution is one rectangle, updated as points are
// chosen. More: contributions are kept as upper bounds (a point's contribution only shrinks as
// S grows — submodularity) and recomputed lazily, largest bound first, until a computed one
// beats every bound left. Copies of a point add no volume: only distinct points compete, and
// copies are taken (in the order given) only when there are fewer distinct points than asked
// for; with an infinite reference point every contribution is infinite and the first k in
// lexicographic order are taken — all as Optuna does. Two points that add exactly the same
// volume (symmetric ones) are a tie that rounding breaks, Optuna's by numpy's and BLAS's
// arithmetic: beyond two objectives such a tie may go the other way here.
// tests/search/test_tpe_multi.cpp checks all three functions against Optuna itself
// (tests/fixtures/search/motpe.json, made by make_motpe_fixture.py).
#pragma once
#include <cstddef>
#include <vector>

namespace mase::search::hv {

using Losses = std::vector<double>;  // one point: a loss per objective, lower is better

// The hypervolume of `points` (any number of objectives, each point as long as the reference)
// against `reference` (Optuna's compute_hypervolume): 0 for no points; +inf if the reference
// is not finite. ConfigError if a point is longer or shorter than the reference, or not at or
// below it in every objective.
double compute(const std::vector<Losses>& points, const Losses& reference);

// The reference point TPE uses for a front (Optuna's _get_reference_point): per objective the
// worst loss w, moved outwards by 10% (max(1.1 w, 0.9 w)), 1e-12 where that is 0.
Losses reference_point(const std::vector<Losses>& points);

// Non-domination ranks (Optuna's _calculate_nondomination_rank): 0 for the Pareto front of
// `points`, 1 for the front of what remains, and so on; copies share a rank. A rank is one pass
// over the distinct points in lexicographic order (the first point left is on the front; drop
// what it weakly dominates; repeat), so a study whose trials each beat the last costs O(n) a
// rank, not O(n^2). With `enough` > 0 it stops once at least that many points are ranked (TPE
// needs only its good ones); the points left get -1. Points must not hold NaN.
std::vector<int> nondomination_ranks(const std::vector<Losses>& points, size_t enough = 0);

// Greedy HSSP (Optuna's _solve_hssp): `subset_size` of `points` (0 < subset_size <=
// points.size()), returned as their labels (labels[i] names points[i]) in the order chosen.
// Optuna applies it to one non-domination rank; any set is accepted.
std::vector<size_t> hssp(const std::vector<Losses>& points, const std::vector<size_t>& labels,
                         size_t subset_size, const Losses& reference);

}  // namespace mase::search::hv
