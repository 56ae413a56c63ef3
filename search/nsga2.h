// search/nsga2.h — NSGA-II, the sampler of multi-objective studies (Optuna's NSGAIISampler).
//
// A multi-objective study has no single best trial: trial a *dominates* b when a is at least as
// good in every objective and better in one, and the answer is the Pareto front, the trials no
// other trial dominates (Study::pareto_front). NSGA-II (Deb et al., 2002) searches for that
// front as a genetic algorithm:
//
//   generations   trials are grouped into generations of `population_size` complete trials;
//                 a new trial joins the newest generation until it has that many, then starts
//                 the next (stored with the trial as system attribute NSGAIISampler:generation,
//                 as Optuna does, so Optuna continues a mase study and the other way round)
//   parents       the parents of generation g are the elite of generation g−1 and its own
//                 parents: sorted into non-domination fronts (front 0 is the Pareto front of
//                 that pool, front 1 what remains once it is removed, ...), whole fronts taken
//                 while they fit, the front that does not fit cut by *crowding distance* (the
//                 trials in the emptiest part of the front first: it keeps the front spread out)
//   a child       with probability 0.9 a crossover of two parents, each picked by a binary
//                 tournament (of two random parents the one that dominates, else the second),
//                 every parameter taken from either parent with probability 1/2 (uniform
//                 crossover); otherwise a copy of one random parent. Then each parameter is
//                 mutated with probability 1/(number of parameters, those of one value not
//                 counted, as Optuna's): drawn afresh, at random.
//                 Generation 0 has no parents: its trials are drawn at random.
//   constraints   when trials carry constraints (Trial::constraints: feasible when all <= 0),
//                 the elite ranks feasible trials first, then the infeasible ones by their total
//                 violation, and the tournament's "dominates" becomes constrained domination
//                 (a feasible trial beats an infeasible one, two infeasible ones by violation)
//
// Like every sampler here it is stateless (search/sampler.h): the generation of a new trial and
// every generation's parents are computed again from the history at each ask. Optuna instead
// caches each generation's parents in the study when it first needs them; the two agree while
// one process runs the study, and with several workers mase's parents also see a trial of the
// previous generation that completed after the first child of the next one was asked for.
// The random draws are mase's own (Philox, search/sampler.h), not numpy's: the algorithm is
// Optuna's, the sequence of trials is not.
//
// The functions below work on objective vectors as stored (each objective in its own direction),
// and are checked against Optuna 5.0's own on 300 random populations
// (tests/fixtures/search/nsga2.json, made by make_nsga2_fixture.py).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/sampler.h"

namespace mase::search {

namespace nsga2 {

using Point = std::vector<double>;  // one trial's objective values, as the objective returned them

// A value for each of `objectives` (a complete trial read back without one of its trial_values
// rows has a NaN in its place, or fewer values): what ranking a trial takes.
bool has_every_value(const Point& p, size_t objectives);
// a no worse than b in every objective and better in at least one (per direction)
bool dominates(const Point& a, const Point& b, const std::vector<Direction>& directions);
// The non-domination fronts: indices into `points`, front 0 first, each front in the order
// the points are given (Optuna's _rank_population). ConfigError for a NaN value (it orders
// nothing; Study::tell fails a trial that returns one). With `enough` > 0 only the first
// fronts that hold at least that many points (1: the Pareto front alone).
std::vector<std::vector<size_t>> fronts(const std::vector<Point>& points,
                                        const std::vector<Direction>& directions,
                                        size_t enough = 0);
// The crowding distance of each point of `members` (indices into `points`), in members' order:
// per objective, the gap between a point's two neighbours in that objective divided by the
// objective's finite range, summed over objectives; the two ends of each objective get +inf
// (Optuna's _calc_crowding_distance, its treatment of equal and infinite values included).
std::vector<double> crowding_distances(const std::vector<Point>& points,
                                       const std::vector<size_t>& members);
// The elite of `points` (indices, in Optuna's order): whole fronts while they fit in
// `population_size`, then the first front that does not fit, by crowding distance, largest
// first (ties broken as Optuna's sorts break them).
// With `penalty` (one per point: the sum of its positive constraint values, search/sampler.h's
// violation), the constrained ranking instead: constrained_fronts.
std::vector<size_t> elite(const std::vector<Point>& points, const std::vector<Direction>& directions,
                          size_t population_size, const std::vector<double>& penalty = {});
// Constrained NSGA-II's fronts (Deb et al., 2002; Optuna's _fast_non_domination_rank with a
// penalty): the feasible points (penalty <= 0) ranked as fronts() ranks them, then one front
// per distinct penalty of the infeasible ones, smallest first; each front in the order the
// points came.
std::vector<std::vector<size_t>> constrained_fronts(const std::vector<Point>& points,
                                                    const std::vector<Direction>& directions,
                                                    const std::vector<double>& penalty);
// a constrained-dominates b: both feasible and a dominates b; or a feasible and b not; or both
// infeasible and a's penalty smaller (Optuna's _constrained_dominates, for complete trials).
bool constrained_dominates(const Point& a, double penalty_a, const Point& b, double penalty_b,
                           const std::vector<Direction>& directions);

// The hypervolume of two objectives: the area of the region the points dominate and the
// reference point bounds (each objective in its own direction; a point not better than the
// reference in both adds nothing) — the usual single number for how good a front is: it grows
// when a point moves outwards or a new one fills a gap (Optuna's compute_hypervolume, which
// works on losses). ConfigError unless there are two objectives, and the reference and every
// point have a value for each.
double hypervolume(const std::vector<Point>& points, const std::vector<Direction>& directions,
                   const Point& reference);

}  // namespace nsga2

struct Nsga2Options {
  int64_t population_size = 50;  // Optuna's default; a study of a few dozen trials wants ~8
  double crossover_prob = 0.9;
  double swapping_prob = 0.5;    // uniform crossover: P(a parameter from the first parent)
  // mutation: each parameter with probability 1/(number of parameters), as Optuna's default
};

class Nsga2Sampler : public Sampler {
 public:
  // ConfigError unless population_size >= 2 and both probabilities are in [0, 1].
  explicit Nsga2Sampler(uint64_t seed, Nsga2Options options = {});
  // "nsga2" (population 50) or "nsga2:N" for another population size (what make_sampler reads)
  std::string name() const override;
  void set_directions(const std::vector<Direction>& directions) override;
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;
  std::vector<std::pair<std::string, std::string>> trial_attrs(
      const std::vector<Trial>& history, int64_t number) const override;

  // The generation a trial asked for now joins (Optuna's get_trial_generation), and the
  // parents of generation g (indices into `history`, which is in trial order; returned in
  // that order), both from the history alone.
  int64_t next_generation(const std::vector<Trial>& history) const;
  std::vector<size_t> parents(const std::vector<Trial>& history, int64_t generation) const;

 private:
  uint64_t seed_;
  Nsga2Options options_;
  std::vector<Direction> directions_ = {Direction::maximize};
};

}  // namespace mase::search
