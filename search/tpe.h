// search/tpe.h — the Tree-structured Parzen Estimator sampler, as Optuna's default TPESampler.
//
// Bergstra et al., "Algorithms for Hyper-Parameter Optimization", NeurIPS 2011; Falkner et al.,
// "BOHB", ICML 2018 (the multivariate kernel). The details follow Optuna 5.0.0's implementation
// (optuna/samplers/_tpe) with the settings of `optuna.samplers.TPESampler()` for a
// single-objective study — multivariate=True, constant_liar=True, group=False, prior_weight 1,
// consider_magic_clip, no consider_endpoints, default_gamma, default_weights, n_startup_trials
// 10, n_ei_candidates 24 — so that a student's search here is as sample-efficient as the same
// search in Optuna (bench/tpe/ compares the two: docs/lab2.md "TPE against Optuna"):
//   1. until n_startup_trials (10) trials are complete, trials are random (RandomSampler, same
//      seed);
//   2. the complete trials are split by value: the best gamma(n) = min(ceil(0.1 n), 25) are
//      "good" (below, l), the rest "bad" (above, g); with the constant liar, trials still
//      running (in other processes) join the bad ones — "do not propose what is being tried" —
//      without counting in n (Optuna's _split_trials);
//   3. "tpe" (multivariate, the default): ONE mixture over all parameters together, each kernel
//      a product of the one-parameter kernels below centred on one trial's values, all sharing
//      that trial's weight (tpe_multivariate.cpp); "tpe-independent" (multivariate = false):
//      per parameter, independently, a Parzen estimator is
//      built from each group: a mixture with one kernel per observation plus a prior kernel
//      (weight prior_weight = 1), observation weights 1 for n < 25 and else a ramp from 1/n to 1
//      over the oldest n - 25 and 1 for the newest 25 (Optuna's default_weights);
//        numeric (integer, real; log ones in log space): truncated normals on [low, high]
//          (integers: on [low - step/2, high + step/2], then rounded to the step), centred on
//          the observations, each sigma the larger gap to its sorted neighbours, the range ends
//          counting as neighbours (for n >= 2 the two end ones take the inner gap only), clipped
//          to [(high - low) / min(100, n + 2), high - low] (n + 2: the n + 1 kernels, prior
//          included, plus one); the prior is centred at (low + high) / 2 with sigma high - low;
//        categorical: kernel i puts weight 1 on its observed choice plus prior_weight / (n + 1)
//          on every choice, normalised; the prior kernel is uniform;
//   4. n_ei_candidates (24) candidates are drawn from l and the one maximising
//      log l(x) - log g(x) is returned (multivariate: whole points, scored jointly).
// Pruned trials (search/pruner.h) count in n as complete ones do (and towards
// n_startup_trials); they fill the good group only after every complete trial, ranked as Optuna
// ranks them: the furthest step reached first, then the better last value there (a NaN last;
// no report at all: after all of them), Optuna's _split_pruned_trials.
// Infeasible trials (a constraint > 0: Trial::constraints, Optuna's set_constraint) count in
// n too, and fill the good group only after every complete and pruned trial, the smallest
// violation first (Optuna's _split_infeasible_trials; fill_with_infeasible).
// Several objectives (Optuna's MOTPE, the default sampler of such a study in Optuna 5.0):
// step 2 splits by non-domination rank and hypervolume instead of by value, gamma(n) =
// ceil(0.1 n) without the cap, the good trials' weights are all 1, and "tpe" is independent
// there as Optuna's TPESampler() is (its multivariate=None): search/tpe_multi.cpp.
// Random numbers come from Philox keyed by (seed, trial number), so a study is reproducible;
// they are the only thing that differs from Optuna (tests/search/test_tpe*.cpp check the rest
// against fixtures made by Optuna itself).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/sampler.h"

namespace mase::search {

struct TpeOptions {
  int n_startup_trials = 10;
  int n_ei_candidates = 24;
  double prior_weight = 1.0;
  // true: Optuna's default (multivariate=None) — multivariate for one objective, independent
  // for several; false: independent always (Optuna's multivariate=False, "tpe-independent").
  bool multivariate = true;
  // with multivariate: joint for several objectives too (Optuna's multivariate=True,
  // "tpe-multivariate"; the good group's kernels then weigh 1 each, as independent MOTPE's do)
  bool multivariate_several = false;
  bool constant_liar = true;  // running trials count as bad ones
};

// gamma(n) = min(ceil(0.1 n), 25): how many of n complete trials count as good.
int tpe_gamma(int n);
// Several objectives: ceil(0.1 n), uncapped (Optuna's default_gamma_multiobjective).
int tpe_gamma_multi(int n);
// Optuna's default_weights(n): ones for n < 25, else linspace(1/n, 1, n - 25) then 25 ones.
std::vector<double> tpe_weights(int n);

// Helpers shared by tpe.cpp and tpe_multivariate.cpp.
bool single_valued(const Param& p);  // a parameter with one possible value: nothing to model
// log sum_k exp(terms[k]) without overflow, floored at log(1e-300) so that a difference of two
// such logs is never -inf - (-inf).
double log_sum_exp(const std::vector<double>& terms);

// One parameter's Parzen estimator over the internal form (search/space.h): a mixture of
// kernels; for numeric parameters the kernels live in the transformed space (log for log ones).
class ParzenEstimator {
 public:
  // observations: internal values, oldest first (their weights come from tpe_weights, or are
  // all 1 with equal_weights: the good group of a study of several objectives).
  ParzenEstimator(const Param& p, const std::vector<double>& observations, double prior_weight,
                  bool equal_weights = false);
  // Draws a value (internal form) from uniforms in [0, 1): u_component picks the kernel,
  // u_value1 is the quantile drawn from it (inverse-CDF sampling); u_value2 is unused (spare).
  double sample(double u_component, double u_value1, double u_value2) const;
  // log of the density at x (numeric, in the transformed space: for a log real, the density of
  // log x; for integers the probability of the step's bin; categorical: the choice's).
  double log_pdf(double internal) const;
  // The parts of both, per mixture component k (the multivariate estimator combines them):
  // the component that u picks (weights as numpy's RandomState.choice), a draw from component k
  // at quantile u, and log of component k's own density or mass at x (its weight left out).
  size_t pick_component(double u) const;
  double sample_component(size_t k, double u) const;
  void log_kernels(double internal, double* out) const;  // out: weights().size() values

  // Inspection for tests and for students: component weights (sum 1), and for numeric
  // parameters the means and sigmas in the transformed space; for categoricals the per-component
  // choice probabilities, row-major (components x choices).
  const std::vector<double>& weights() const { return weights_; }
  const std::vector<double>& mus() const { return mus_; }
  const std::vector<double>& sigmas() const { return sigmas_; }
  const std::vector<double>& choice_probs() const { return choice_probs_; }

 private:
  const Param* param_;
  std::vector<double> weights_, mus_, sigmas_, choice_probs_;
  double low_ = 0, high_ = 0;  // the truncation range in the transformed space
};

// The joint Parzen estimator of multivariate TPE over several parameters: component k is the
// product of the one-parameter kernels k of each parameter's ParzenEstimator (built from the
// same trials, so they share the weights); log_pdf(x) = log sum_k w_k prod_d kernel_kd(x_d).
class MultivariateParzenEstimator {
 public:
  // params: the parameters modelled together (none single-valued); observations: one point per
  // trial, oldest first, each with a value for every parameter in params.
  // equal_weights: every observation's kernel weighs 1 (the good group of several objectives).
  MultivariateParzenEstimator(const std::vector<const Param*>& params,
                              const std::vector<Values>& observations, double prior_weight,
                              bool equal_weights = false);
  // A point drawn from uniforms u[0] (the component) and u[1 + d] (parameter d's quantile).
  Values sample(const double* u) const;
  double log_pdf(const Values& x) const;
  const std::vector<ParzenEstimator>& marginals() const { return marginals_; }
  const std::vector<double>& weights() const { return marginals_.front().weights(); }

 private:
  std::vector<const Param*> params_;
  std::vector<ParzenEstimator> marginals_;
};

// Optuna's _split_complete_trials_multi_objective on the losses of complete trials (one vector
// per trial, every objective as a loss: maximized ones negated), oldest first: the positions of
// the best n_below, in no particular order — whole non-domination ranks while they fit, the
// next cut by hypervolume subset selection (tpe_multi.cpp; search/importance.cpp's top trials).
std::vector<size_t> good_positions(const std::vector<std::vector<double>>& loss, size_t n_below);

// log(Phi(b) − Phi(a)) for a <= b: the log of a standard normal's mass inside [a, b] (the
// kernels of integer parameters; search/importance.cpp's too).
double log_gauss_mass(double a, double b);

// The trials TPE models, split (step 2 above): good ones and bad ones, each oldest first.
struct TpeSplit {
  std::vector<const Trial*> good, bad;
  size_t n_complete = 0;  // n of gamma(n): complete and pruned trials, never running ones
};
TpeSplit tpe_split(const std::vector<Trial>& history, bool constant_liar);
// What is left of the good group's n_good places goes to the infeasible trials (a constraint
// > 0, Trial::constraints) with the smallest violation; the rest of them are bad (Optuna's
// _split_infeasible_trials). Both forms of tpe_split end with it.
void fill_with_infeasible(TpeSplit& split, std::vector<const Trial*> infeasible, size_t n_good);
// The same for several objectives (directions.size() >= 2, else ConfigError), ranking
// Trial::objectives: non-domination ranks, the last one cut by hypervolume (tpe_multi.cpp).
TpeSplit tpe_split(const std::vector<Trial>& history, bool constant_liar,
                   const std::vector<Direction>& directions);

class TpeSampler : public Sampler {
 public:
  explicit TpeSampler(uint64_t seed, TpeOptions options = {}) : seed_(seed), opt_(options) {}
  std::string name() const override {
    if (!opt_.multivariate) return "tpe-independent";
    return opt_.multivariate_several ? "tpe-multivariate" : "tpe";
  }
  // Any number of objectives (one: Trial::value; several: Trial::objectives, tpe_multi.cpp).
  void set_directions(const std::vector<Direction>& directions) override;
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;

 private:
  // Multivariate step 3-4: sets every parameter of `out` that is not single-valued.
  void sample_joint(const Space& space, const TpeSplit& split, int64_t number, Values& out) const;
  uint64_t seed_;
  TpeOptions opt_;
  std::vector<Direction> directions_ = {Direction::maximize};
};

}  // namespace mase::search
