// search/tpe.h — the Tree-structured Parzen Estimator sampler, as Optuna's default TPESampler.
//
// Bergstra et al., "Algorithms for Hyper-Parameter Optimization", NeurIPS 2011; the details
// follow Optuna's implementation (optuna/samplers/_tpe) with its default settings, so that a
// student's search here is as sample-efficient as the same search in Optuna:
//   1. the first n_startup_trials (10) trials are random (RandomSampler, same seed);
//   2. the complete trials are split by value: the best gamma(n) = min(ceil(0.1 n), 25) are
//      "good" (below, l), the rest "bad" (above, g);
//   3. per parameter, independently (Optuna's multivariate = false), a Parzen estimator is
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
//      log l(x) - log g(x) is returned.
// Random numbers come from Philox keyed by (seed, trial number), so a study is reproducible.
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
};

// gamma(n) = min(ceil(0.1 n), 25): how many of n complete trials count as good.
int tpe_gamma(int n);
// Optuna's default_weights(n): ones for n < 25, else linspace(1/n, 1, n - 25) then 25 ones.
std::vector<double> tpe_weights(int n);

// One parameter's Parzen estimator over the internal form (search/space.h): a mixture of
// kernels; for numeric parameters the kernels live in the transformed space (log for log ones).
class ParzenEstimator {
 public:
  // observations: internal values, oldest first (their weights come from tpe_weights).
  ParzenEstimator(const Param& p, const std::vector<double>& observations, double prior_weight);
  // Draws a value (internal form) from uniforms in [0, 1): u_component picks the kernel,
  // u_value1 is the quantile drawn from it (inverse-CDF sampling); u_value2 is unused (spare).
  double sample(double u_component, double u_value1, double u_value2) const;
  // log of the density at x (numeric, in the transformed space: for a log real, the density of
  // log x; for integers the probability of the step's bin; categorical: the choice's).
  double log_pdf(double internal) const;

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

class TpeSampler : public Sampler {
 public:
  explicit TpeSampler(uint64_t seed, TpeOptions options = {}) : seed_(seed), opt_(options) {}
  std::string name() const override { return "tpe"; }
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;

 private:
  uint64_t seed_;
  TpeOptions opt_;
};

}  // namespace mase::search
