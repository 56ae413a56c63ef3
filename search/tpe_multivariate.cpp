// search/tpe_multivariate.cpp — multivariate TPE: one Parzen estimator over all parameters
// together, and the sampler step that uses it (Optuna's default for one objective; for several,
// "tpe-multivariate", Optuna's multivariate=True).
//
// Read search/tpe.h first (the algorithm and the settings it matches), then tpe.cpp (the
// one-parameter kernels this file multiplies together). Why multivariate: independent TPE
// models l(x_d) / g(x_d) one parameter at a time, so it cannot see that, say, hidden_size is
// good only with a matching num_heads; here kernel k is centred on trial k's whole point,
//   l(x) = sum_k w_k prod_d kernel_kd(x_d),
// and a candidate is drawn as a whole point (one component k for every parameter), so the
// good trials' combinations are proposed again (Falkner et al. 2018, BOHB, section 3.1; Optuna's
// _MixtureOfProductDistribution). tests/search/test_tpe_multivariate.cpp checks it against
// numbers from Optuna 5.0.0.
#include <cmath>

#include "runtime/error.h"
#include "search/tpe.h"

namespace mase::search {

namespace {

// One parameter's column of the observed points.
std::vector<double> column(const std::vector<Values>& points, const Param& p) {
  std::vector<double> xs;
  xs.reserve(points.size());
  for (const Values& v : points) {
    auto it = v.find(p.name);
    MASE_CHECK(it != v.end(), ConfigError, "[tpe] expected every observed point to have a value "
               "for parameter '", p.name, "', got a point without one");
    xs.push_back(it->second);
  }
  return xs;
}

// The points of a group of trials that have a valid value for every modelled parameter (as
// Optuna's _get_internal_repr: a trial missing one is left out of the joint model).
std::vector<Values> points_of(const std::vector<const Trial*>& group,
                              const std::vector<const Param*>& params) {
  std::vector<Values> out;
  for (const Trial* t : group) {
    Values v;
    for (const Param* p : params) {
      auto it = t->values.find(p->name);
      if (it == t->values.end() || !p->contains(it->second)) break;
      v[p->name] = it->second;
    }
    if (v.size() == params.size()) out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

MultivariateParzenEstimator::MultivariateParzenEstimator(const std::vector<const Param*>& params,
                                                         const std::vector<Values>& observations,
                                                         double prior_weight,
                                                         bool equal_weights)
    : params_(params) {
  MASE_CHECK(!params.empty(), ConfigError,
             "[tpe] expected at least one parameter to model jointly, got none");
  marginals_.reserve(params.size());
  // The same trials, oldest first, for every parameter: the marginals' weights are the same.
  for (const Param* p : params)
    marginals_.emplace_back(*p, column(observations, *p), prior_weight, equal_weights);
}

Values MultivariateParzenEstimator::sample(const double* u) const {
  const size_t k = marginals_.front().pick_component(u[0]);
  Values x;
  for (size_t d = 0; d < params_.size(); ++d)
    x[params_[d]->name] = marginals_[d].sample_component(k, u[1 + d]);
  return x;
}

double MultivariateParzenEstimator::log_pdf(const Values& x) const {
  const std::vector<double>& w = weights();
  std::vector<double> terms(w.size()), kernel(w.size());  // log w_k + sum_d log kernel_kd(x_d)
  for (size_t k = 0; k < w.size(); ++k) terms[k] = std::log(w[k]);
  for (size_t d = 0; d < params_.size(); ++d) {
    auto it = x.find(params_[d]->name);
    MASE_CHECK(it != x.end(), ConfigError, "[tpe] expected a value for parameter '",
               params_[d]->name, "', got a point without one");
    marginals_[d].log_kernels(it->second, kernel.data());
    for (size_t k = 0; k < w.size(); ++k) terms[k] += kernel[k];
  }
  return log_sum_exp(terms);
}

void TpeSampler::sample_joint(const Space& space, const TpeSplit& split, int64_t number,
                              Values& out) const {
  // Single-valued parameters have nothing to model (Optuna leaves them out of the relative
  // search space; the caller set them); the rest are modelled together.
  std::vector<const Param*> joint;
  for (const Param& p : space.params())
    if (!single_valued(p)) joint.push_back(&p);
  if (joint.empty()) return;
  // several objectives (tpe-multivariate): the good trials' kernels weigh 1 each (tpe_multi.cpp)
  const MultivariateParzenEstimator l(joint, points_of(split.good, joint), opt_.prior_weight,
                                      /*equal_weights=*/directions_.size() > 1);
  const MultivariateParzenEstimator g(joint, points_of(split.bad, joint), opt_.prior_weight);

  // This trial's own Philox stream: the top bit keeps it apart from RandomSampler's (stream =
  // trial number), the low 20 bits all set apart from the independent sampler's per-parameter
  // streams. Candidate c uses elements c (1 + D) .. c (1 + D) + D.
  const uint64_t stream = (uint64_t{1} << 63) | (static_cast<uint64_t>(number) << 20) | 0xFFFFF;
  const size_t D = joint.size();
  std::vector<double> u(1 + D);
  Values best;
  double best_score = 0;
  for (int c = 0; c < opt_.n_ei_candidates; ++c) {
    for (size_t i = 0; i <= D; ++i)
      u[i] = unit_uniform(seed_, stream, static_cast<uint64_t>(c) * (1 + D) + i);
    Values x = l.sample(u.data());
    const double score = l.log_pdf(x) - g.log_pdf(x);  // log of l(x) / g(x)
    if (c == 0 || score > best_score) {  // the first of equal scores wins, as numpy.argmax
      best = std::move(x);
      best_score = score;
    }
  }
  out.insert(best.begin(), best.end());
}

}  // namespace mase::search
