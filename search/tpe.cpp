// search/tpe.cpp — the TPE sampler: Parzen estimators of the good and the bad trials, and the
// candidate that most favours the good ones.
//
// Read search/tpe.h first: it states the algorithm (Optuna's default TPESampler). This file is
// the one-parameter estimator, the good/bad split and the independent sampler (one parameter
// at a time); search/tpe_multivariate.cpp multiplies the estimators into the joint one, and
// search/tpe_multi.cpp splits a study of several objectives.
// In one line: split the finished trials into good and bad by value, fit a density to each
// group's values of a parameter — l(x) for the good, g(x) for the bad — draw 24
// candidates from l and keep the one with the largest log l(x) − log g(x). Maximising l/g is
// maximising the expected improvement (Bergstra et al. 2011, section 4.1).
//
// The numbers follow Optuna 5.0's optuna/samplers/_tpe/parzen_estimator.py and
// probability_distributions.py exactly (tests/search/test_tpe.cpp checks them against a fixture
// made by Optuna itself); only the random numbers differ: ours come from Philox
// (unit_uniform), so a study is reproducible from (seed, history).
//
// The densities (numeric parameters, in the transformed space t = x, or t = log x if p.log):
//   kernel k is a normal N(mu_k, sigma_k) truncated to [lo, hi]:
//     pdf_k(t) = phi((t − mu_k) / sigma_k) / (sigma_k · Z_k),
//     Z_k = Phi((hi − mu_k) / sigma_k) − Phi((lo − mu_k) / sigma_k)     (the mass inside)
//   a real's log_pdf is log Σ_k w_k pdf_k(t) (in t: no Jacobian; it would cancel in l/g);
//   an integer's is log Σ_k w_k P_k(bin), the kernel's mass over the bin [x − step/2, x + step/2]
//   (transformed), divided by Z_k.
// Everything is done in logs (log-sum-exp over kernels), and masses are computed on the side
// of the normal where Phi is small, where erfc keeps full relative precision.
#include "search/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/error.h"

namespace mase::search {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// log(1e-300): the floor of a log density, so that log l − log g never becomes −inf − (−inf).
constexpr double kLogFloor = -690.77552789821368;
const double kLogSqrt2Pi = 0.5 * std::log(2.0 * std::numbers::pi);

// Phi(z), the standard normal CDF. erfc keeps full relative precision for z < 0 (the left tail).
double norm_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// Phi^{-1}(p) for p in (0, 1): Acklam's rational approximation (relative error 1.2e-9), then one
// Halley step on Phi − p, which brings it to double precision.
double norm_quantile(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double p_low = 0.02425;
  double x;
  if (p < p_low) {  // lower tail
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - p_low) {  // central region
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {  // upper tail
    double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // Halley: e = Phi(x) − p, u = e / phi(x), x −= u / (1 + x u / 2).
  double e = norm_cdf(x) - p;
  double u = e * std::exp(kLogSqrt2Pi + 0.5 * x * x);
  if (std::isfinite(u)) x -= u / (1 + 0.5 * x * u);
  return x;
}

// The q-quantile of a standard normal truncated to [a, b] (inverse-CDF sampling): z with
// Phi(z) = Phi(a) + q (Phi(b) − Phi(a)). Past the median the complement 1 − Phi(z) =
// Phi(−b) + (1 − q)(Phi(b) − Phi(a)) is the small, precise number, so invert that one.
double trunc_norm_quantile(double q, double a, double b) {
  double mass = std::exp(log_gauss_mass(a, b));
  double p = norm_cdf(a) + q * mass;
  double z = p <= 0.5 ? norm_quantile(p) : -norm_quantile(norm_cdf(-b) + (1 - q) * mass);
  return std::clamp(z, a, b);
}

// The first index whose cumulative weight (normalised to a total of 1) exceeds u — how numpy's
// RandomState.choice picks Optuna's kernel — or, with strictly_greater = false, reaches u — how
// Optuna picks a categorical's choice. The two differ only when u hits a boundary exactly.
size_t pick(const double* w, size_t n, double u, bool strictly_greater) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += w[i];
  double cum = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    cum += w[i];
    if (strictly_greater ? cum / total > u : cum / total >= u) return i;
  }
  return n - 1;  // the last one takes whatever rounding left over
}

}  // namespace

// log Σ_k exp(terms[k]), shifted by the largest term so that nothing overflows; floored.
double log_sum_exp(const std::vector<double>& terms) {
  double m = -kInf;
  for (double t : terms) m = std::max(m, t);
  if (!(m > kLogFloor)) return kLogFloor;  // every term is (nearly) zero probability
  double s = 0;
  for (double t : terms) s += std::exp(t - m);
  return std::max(m + std::log(s), kLogFloor);
}

bool single_valued(const Param& p) {
  return p.kind == Param::Kind::real ? p.low == p.high : p.cardinality() == 1;
}

int tpe_gamma(int n) {
  // ceil(0.1 n) in integers, (n + 9) / 10: the same as Optuna's math.ceil(0.1 * n) in floating
  // point for n = 0..300 (the fixture checks), and both are capped at 25 from n = 241 on.
  return std::min((std::max(n, 0) + 9) / 10, 25);
}

std::vector<double> tpe_weights(int n) {
  if (n <= 0) return {};
  std::vector<double> w(static_cast<size_t>(n), 1.0);
  if (n < 25) return w;
  // Oldest n − 25: numpy.linspace(1/n, 1, n − 25) (start + i·step, the last set to 1 exactly).
  const int ramp = n - 25;
  const double start = 1.0 / n;
  for (int i = 0; i < ramp; ++i)
    w[static_cast<size_t>(i)] = ramp == 1 ? start : start + i * ((1.0 - start) / (ramp - 1));
  if (ramp > 1) w[static_cast<size_t>(ramp - 1)] = 1.0;
  return w;
}

ParzenEstimator::ParzenEstimator(const Param& p, const std::vector<double>& observations,
                                 double prior_weight, bool equal_weights)
    : param_(&p) {
  MASE_CHECK(std::isfinite(prior_weight) && prior_weight >= 0, ConfigError, "[tpe] parameter '",
             p.name, "' expected prior_weight >= 0, got ", prior_weight);
  MASE_CHECK(!single_valued(p), ConfigError, "[tpe] parameter '", p.name,
             "' takes a single value: there is nothing to estimate");
  for (double x : observations)
    MASE_CHECK(p.contains(x), ConfigError, "[tpe] parameter '", p.name,
               "' expected observations it can take, got ", x);
  const size_t n = observations.size();

  // Component weights: one per observation (tpe_weights, oldest first) and the prior's; or the
  // prior alone when there is nothing observed. Normalised to sum 1.
  if (n == 0) {
    weights_ = {1.0};
  } else {
    weights_ = equal_weights ? std::vector<double>(n, 1.0) : tpe_weights(static_cast<int>(n));
    weights_.push_back(prior_weight);
  }
  double total = 0;
  for (double w : weights_) total += w;
  for (double& w : weights_) w /= total;

  if (p.kind == Param::Kind::categorical) {
    // Kernel i: 1 on its observed choice plus prior_weight / (n + 1) on every choice; the prior
    // kernel: prior_weight / (n + 1) everywhere, i.e. uniform. Rows normalised.
    const size_t k = p.choices.size();
    if (n == 0) {
      choice_probs_.assign(k, 1.0 / static_cast<double>(k));
      return;
    }
    choice_probs_.assign((n + 1) * k, prior_weight / static_cast<double>(n + 1));
    for (size_t i = 0; i < n; ++i) choice_probs_[i * k + static_cast<size_t>(observations[i])] += 1;
    for (size_t i = 0; i <= n; ++i) {
      double row = 0;
      for (size_t j = 0; j < k; ++j) row += choice_probs_[i * k + j];
      if (row > 0)  // only the prior's row can be all zero (prior_weight 0); leave it so
        for (size_t j = 0; j < k; ++j) choice_probs_[i * k + j] /= row;
    }
    return;
  }

  // Numeric: the truncation range in the transformed space. An integer's values own the bins
  // [x − step/2, x + step/2], so its range reaches half a step past each end.
  const double half = p.kind == Param::Kind::integer ? p.step / 2 : 0.0;
  auto transform = [&](double x) { return p.log ? std::log(x) : x; };
  low_ = transform(p.low - half);
  high_ = transform(p.high + half);
  const double range = high_ - low_;

  mus_.resize(n);
  for (size_t i = 0; i < n; ++i) mus_[i] = transform(observations[i]);

  // Each sigma: the larger gap to its neighbours among the sorted mus (the range ends count as
  // neighbours), except that with 2 or more observations the two end ones take their inner gap
  // only (Optuna's consider_endpoints = false; with one observation its gaps to both ends count).
  if (n > 0) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return mus_[a] < mus_[b]; });
    std::vector<double> s(n + 2);  // sorted mus with the range ends around them
    s[0] = low_;
    for (size_t i = 0; i < n; ++i) s[i + 1] = mus_[order[i]];
    s[n + 1] = high_;
    std::vector<double> sorted_sigma(n);
    for (size_t i = 0; i < n; ++i) sorted_sigma[i] = std::max(s[i + 1] - s[i], s[i + 2] - s[i + 1]);
    if (n >= 2) {
      sorted_sigma[0] = s[2] - s[1];
      sorted_sigma[n - 1] = s[n] - s[n - 1];
    }
    // The "magic clip": no kernel narrower than range / min(100, kernels + 1), where the kernels
    // are the n observations plus the prior, and none wider than the range.
    const double min_sigma = range / std::min(100.0, static_cast<double>(n) + 2.0);
    sigmas_.resize(n);
    for (size_t i = 0; i < n; ++i)
      sigmas_[order[i]] = std::clamp(sorted_sigma[i], min_sigma, range);
  }
  // The prior: centred on the range, as wide as it.
  mus_.push_back(0.5 * (low_ + high_));
  sigmas_.push_back(range);
}

size_t ParzenEstimator::pick_component(double u) const {
  return pick(weights_.data(), weights_.size(), u, /*strictly_greater=*/true);
}

double ParzenEstimator::sample(double u_component, double u_value1, double /*u_value2*/) const {
  // Inverse-CDF sampling needs one uniform for the value; u_value2 is spare.
  return sample_component(pick_component(u_component), u_value1);
}

double ParzenEstimator::sample_component(size_t k, double u) const {
  const Param& p = *param_;
  if (p.kind == Param::Kind::categorical) {
    const size_t m = p.choices.size();
    // Optuna counts the choices whose cumulative probability is below u: the first with >= u.
    return static_cast<double>(pick(&choice_probs_[k * m], m, u, /*strictly_greater=*/false));
  }
  const double mu = mus_[k], sigma = sigmas_[k];
  double z = trunc_norm_quantile(u, (low_ - mu) / sigma, (high_ - mu) / sigma);
  double t = std::clamp(mu + sigma * z, low_, high_);
  double x = p.log ? std::exp(t) : t;
  if (p.kind == Param::Kind::integer)  // round to the step grid (ties to even, as numpy.round)
    return std::clamp(p.low + std::nearbyint((x - p.low) / p.step) * p.step, p.low, p.high);
  return std::clamp(x, p.low, p.high);
}

double ParzenEstimator::log_pdf(double x) const {
  std::vector<double> terms(weights_.size());  // log(w_k) + log(kernel k's density or mass at x)
  log_kernels(x, terms.data());
  for (size_t k = 0; k < terms.size(); ++k) terms[k] += std::log(weights_[k]);
  return log_sum_exp(terms);
}

void ParzenEstimator::log_kernels(double x, double* out) const {
  const Param& p = *param_;
  const size_t n = weights_.size();
  if (p.kind == Param::Kind::categorical) {
    MASE_CHECK(p.contains(x), ConfigError, "[tpe] parameter '", p.name,
               "' expected a choice index, got ", x);
    const size_t m = p.choices.size(), j = static_cast<size_t>(x);
    for (size_t i = 0; i < n; ++i) out[i] = std::log(choice_probs_[i * m + j]);
    return;
  }
  if (!(x >= p.low && x <= p.high)) {  // outside the range: no density
    std::fill(out, out + n, kLogFloor);
    return;
  }
  auto transform = [&](double v) { return p.log ? std::log(v) : v; };
  for (size_t i = 0; i < n; ++i) {
    const double mu = mus_[i], sigma = sigmas_[i];
    const double log_z = log_gauss_mass((low_ - mu) / sigma, (high_ - mu) / sigma);
    if (p.kind == Param::Kind::integer) {  // the mass of x's bin
      const double left = transform(x - p.step / 2), right = transform(x + p.step / 2);
      out[i] = log_gauss_mass((left - mu) / sigma, (right - mu) / sigma) - log_z;
    } else {  // the truncated normal's density
      const double z = (transform(x) - mu) / sigma;
      out[i] = -0.5 * z * z - kLogSqrt2Pi - std::log(sigma) - log_z;
    }
  }
}

namespace {

// Optuna's _get_pruned_trial_score, higher values better: smaller sorts first.
std::pair<double, double> pruned_rank(const Trial& t) {
  if (!t.last_report) return {1.0, 0.0};  // reported nothing: after every trial that did
  const auto [step, v] = *t.last_report;
  return {-static_cast<double>(step), std::isnan(v) ? std::numeric_limits<double>::infinity() : -v};
}

}  // namespace

// Work where the CDF values are small, so the subtraction loses nothing: in the left tail as is,
// in the right tail by symmetry, and across 0 as 1 − (mass left of a) − (mass right of b).
double log_gauss_mass(double a, double b) {
  if (b <= 0) return std::log(norm_cdf(b) - norm_cdf(a));  // log(0) = −inf: no mass, fine
  if (a > 0) return log_gauss_mass(-b, -a);
  return std::log1p(-norm_cdf(a) - norm_cdf(-b));
}

void fill_with_infeasible(TpeSplit& split, std::vector<const Trial*> infeasible, size_t n_good) {
  std::stable_sort(infeasible.begin(), infeasible.end(), [](const Trial* a, const Trial* b) {
    return violation(*a) < violation(*b);  // Optuna's _split_infeasible_trials
  });
  const size_t take = std::min(n_good - std::min(n_good, split.good.size()), infeasible.size());
  split.good.insert(split.good.end(), infeasible.begin(),
                    infeasible.begin() + static_cast<std::ptrdiff_t>(take));
  split.bad.insert(split.bad.end(), infeasible.begin() + static_cast<std::ptrdiff_t>(take),
                   infeasible.end());
}

TpeSplit tpe_split(const std::vector<Trial>& history, bool constant_liar) {
  // Complete trials say how good their point is (a NaN value says nothing); pruned ones say how
  // far they got; with the liar, running ones are known to be taken and are told "bad".
  // Infeasible ones (a constraint > 0), complete or pruned, come after both, by how far they
  // are from feasible.
  TpeSplit out;
  std::vector<const Trial*> done, pruned, infeasible;
  for (const Trial& t : history) {
    const bool finished = t.state == TrialState::complete || t.state == TrialState::pruned;
    if (finished && violation(t) > 0) infeasible.push_back(&t);
    else if (t.state == TrialState::complete && !std::isnan(t.value)) done.push_back(&t);
    else if (t.state == TrialState::pruned) pruned.push_back(&t);
    if (t.state == TrialState::running && constant_liar) out.bad.push_back(&t);
  }
  out.n_complete = done.size() + pruned.size() + infeasible.size();
  // Good = the best gamma(n) by value (higher is better; ties to the older trial), topped up
  // with the best-ranked pruned trials when there are fewer complete ones; bad = the rest; each
  // group back in trial order, oldest first, which is the order the weights assume.
  std::stable_sort(done.begin(), done.end(), [](const Trial* a, const Trial* b) {
    return a->value != b->value ? a->value > b->value : a->number < b->number;
  });
  std::stable_sort(pruned.begin(), pruned.end(), [](const Trial* a, const Trial* b) {
    return pruned_rank(*a) < pruned_rank(*b);
  });
  const auto n_good = static_cast<size_t>(tpe_gamma(static_cast<int>(out.n_complete)));
  const size_t from_done = std::min(n_good, done.size());
  const size_t from_pruned = std::min(n_good - from_done, pruned.size());
  out.good.assign(done.begin(), done.begin() + static_cast<std::ptrdiff_t>(from_done));
  out.good.insert(out.good.end(), pruned.begin(),
                  pruned.begin() + static_cast<std::ptrdiff_t>(from_pruned));
  out.bad.insert(out.bad.end(), done.begin() + static_cast<std::ptrdiff_t>(from_done), done.end());
  out.bad.insert(out.bad.end(), pruned.begin() + static_cast<std::ptrdiff_t>(from_pruned),
                 pruned.end());
  fill_with_infeasible(out, infeasible, n_good);
  auto by_number = [](const Trial* a, const Trial* b) { return a->number < b->number; };
  std::sort(out.good.begin(), out.good.end(), by_number);
  std::sort(out.bad.begin(), out.bad.end(), by_number);
  return out;
}

void TpeSampler::set_directions(const std::vector<Direction>& directions) {
  MASE_CHECK(!directions.empty(), ConfigError, "[sampler] ", name(),
             " expected at least one direction, got none");
  directions_ = directions;
}

std::optional<Values> TpeSampler::sample(const Space& space, const std::vector<Trial>& history,
                                         int64_t number) {
  MASE_CHECK(opt_.n_ei_candidates >= 1, ConfigError, "[tpe] expected n_ei_candidates >= 1, got ",
             opt_.n_ei_candidates);
  MASE_CHECK(opt_.n_startup_trials >= 0, ConfigError, "[tpe] expected n_startup_trials >= 0, got ",
             opt_.n_startup_trials);

  // Several objectives: split by rank and hypervolume, sample independently (tpe_multi.cpp).
  const bool several = directions_.size() > 1;
  const TpeSplit split = several ? tpe_split(history, opt_.constant_liar, directions_)
                                 : tpe_split(history, opt_.constant_liar);
  // Startup: too little to model yet, so sample at random — exactly what RandomSampler would.
  if (static_cast<int64_t>(split.n_complete) < opt_.n_startup_trials)
    return RandomSampler(seed_).sample(space, history, number);
  // Parameters that can take one value only: nothing to model.
  Values out;
  for (const Param& p : space.params())
    if (single_valued(p)) out[p.name] = p.kind == Param::Kind::categorical ? 0.0 : p.low;
  if (opt_.multivariate && (!several || opt_.multivariate_several)) {
    sample_joint(space, split, number, out);
    return out;
  }
  const auto& good = split.good;
  const auto& bad = split.bad;

  // One parameter's observations in a group: the trials that have a valid value for it.
  auto observed = [](const std::vector<const Trial*>& group, const Param& p) {
    std::vector<double> xs;
    for (const Trial* t : group) {
      auto it = t->values.find(p.name);
      if (it != t->values.end() && p.contains(it->second)) xs.push_back(it->second);
    }
    return xs;
  };

  const auto& params = space.params();
  for (size_t j = 0; j < params.size(); ++j) {
    const Param& p = params[j];
    if (single_valued(p)) continue;  // set above
    const ParzenEstimator l(p, observed(good, p), opt_.prior_weight, /*equal_weights=*/several);
    const ParzenEstimator g(p, observed(bad, p), opt_.prior_weight);
    // This (trial, parameter)'s own Philox stream; the top bit keeps it apart from the streams
    // RandomSampler uses (stream = trial number).
    const uint64_t stream =
        (uint64_t{1} << 63) | (static_cast<uint64_t>(number) << 20) | static_cast<uint64_t>(j);
    double best_x = 0, best_score = -kInf;
    for (int c = 0; c < opt_.n_ei_candidates; ++c) {
      const uint64_t i = 3 * static_cast<uint64_t>(c);
      const double x = l.sample(unit_uniform(seed_, stream, i), unit_uniform(seed_, stream, i + 1),
                                unit_uniform(seed_, stream, i + 2));
      const double score = l.log_pdf(x) - g.log_pdf(x);  // log of l(x) / g(x)
      if (c == 0 || score > best_score) {  // the first of equal scores wins, as numpy.argmax
        best_x = x;
        best_score = score;
      }
    }
    out[p.name] = best_x;
  }
  return out;
}

}  // namespace mase::search
