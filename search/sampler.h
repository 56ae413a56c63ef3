// search/sampler.h — where the next trial's values come from: random, grid, TPE.
//
// A sampler sees the space and every trial so far (any state) and proposes the values of the
// next one. It keeps no state of its own between calls: all it knows is in the history, which
// the study reads back from its storage. That is what lets a killed search resume and several
// processes share one study — each asks with the same history and gets a consistent answer.
//
// Samplers maximize: `Trial::value` is "higher is better". A study that minimizes negates the
// values it hands over (search/study.h).
//
//   random  every parameter drawn independently; trial n's draws are a pure function of
//           (seed, n), so a search is reproducible however its trials interleave.
//   grid    every point of a finite space exactly once, in an order shuffled by the seed;
//           points of failed trials are handed out again; exhausted -> nullopt.
//   tpe     search/tpe.h: Optuna's default Tree-structured Parzen Estimator (multivariate, with
//           the constant liar for parallel workers); tpe-independent: one parameter at a time.
//           Both take several objectives (MOTPE, search/tpe_multi.cpp: good trials by
//           non-domination rank and hypervolume) — Optuna 5.0's default sampler for such a
//           study; "tpe" is then independent, as Optuna's default TPESampler() is there.
//   nsga2   search/nsga2.h: NSGA-II, Optuna's genetic sampler for studies of several objectives.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/space.h"

namespace mase::search {

enum class TrialState { running, complete, failed, pruned };
enum class Direction { maximize, minimize };
const char* to_string(TrialState s);
TrialState trial_state_from(const std::string& s);  // ConfigError if unknown

struct Trial {
  int64_t number = 0;  // 0, 1, 2, ... in the order trials were asked for
  TrialState state = TrialState::running;
  Values values;       // internal form (search/space.h)
  double value = 0;    // the objective; meaningful when state == complete
  // Every objective's value as the objective returned it (never negated: a sampler of several
  // objectives is told their directions, Sampler::set_directions); objectives[0] is `value`
  // before a minimizing study's negation. Filled for complete trials, and for pruned ones
  // that kept a value (not one pruned at a NaN report, nor one of several objectives told
  // without values: Study::tell).
  std::vector<double> objectives;
  int64_t generation = -1;  // NSGA-II's generation of the trial (search/nsga2.h), -1 if none
  int64_t retry_of = -1;  // Study::ask: the interrupted trial whose parameters these are, or -1
  // A pruned trial's last report (step, value; search/pruner.h), value oriented as `value` is
  // (Study::ask negates both when minimizing); none if it reported nothing. TPE ranks pruned
  // trials by it.
  std::optional<std::pair<int64_t, double>> last_report;
  // Constraints (Optuna's trial.set_constraint: name -> value; the trial is feasible when every
  // value is <= 0), set when the trial finished; empty in a study without them. TPE models an
  // infeasible trial after every feasible one (search/tpe.h); the best trials are feasible ones.
  std::map<std::string, double> constraints;
};

// The sum of a trial's positive constraint values (Optuna's _get_infeasible_trial_score): 0 for
// a feasible trial, or one without constraints; how far from feasible an infeasible one is.
double violation(const Trial& trial);

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string name() const = 0;
  // The values of trial `number`, or nullopt when there is nothing left to try.
  virtual std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                                       int64_t number) = 0;
  // The study's objectives, one direction each, told once by the study that owns the sampler
  // (Study::open). By default a sampler ranks one value: more than one objective is a
  // ConfigError naming the samplers that take several — every one make_sampler builds (tpe
  // and nsga2 rank them; random and grid never look); what refuses is a sampler of one value
  // such as sweep_study.h's ordered grid.
  virtual void set_directions(const std::vector<Direction>& directions);
  // System attributes to store with trial `number`, whose values sample() has just proposed
  // from the same history: (Optuna's key, JSON value), e.g. NSGA-II's generation. None here.
  virtual std::vector<std::pair<std::string, std::string>> trial_attrs(
      const std::vector<Trial>& history, int64_t number) const;
};

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }
  void set_directions(const std::vector<Direction>&) override {}  // never looks at values
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;

 private:
  uint64_t seed_;
};

class GridSampler : public Sampler {
 public:
  explicit GridSampler(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "grid"; }
  void set_directions(const std::vector<Direction>&) override {}  // never looks at values
  // ConfigError if the space has a continuous parameter (give it choices instead).
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;
  // What sample checks first, alone: a continuous parameter, or more points than a grid
  // walks (ConfigError). For a command to refuse a space before it writes anything.
  static void check_space(const Space& space);

 private:
  uint64_t seed_;
};

// "random", "grid", "tpe", "tpe-independent", "nsga2" or "nsga2:N" (NSGA-II with a population
// of N) — ConfigError otherwise.
std::unique_ptr<Sampler> make_sampler(const std::string& name, uint64_t seed);

// Helpers shared by the samplers.
// A uniform double in [0, 1) that depends only on (seed, stream, i): 53 bits from Philox.
double unit_uniform(uint64_t seed, uint64_t stream, uint64_t i);
// One parameter drawn uniformly (log-uniformly if p.log) from u in [0, 1): internal form.
double draw_uniform(const Param& p, double u);
// Point `index` of the grid of `space` (0 <= index < grid_size), mixed radix over parameters.
Values grid_point(const Space& space, int64_t index);

}  // namespace mase::search
