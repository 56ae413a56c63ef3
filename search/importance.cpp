// search/importance.cpp — PED-ANOVA parameter importances, Optuna 5.0's rules. Read
// search/importance.h first (what is compared with what, and the densities).
#include "search/importance.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "runtime/error.h"
#include "search/tpe.h"

namespace mase::search {

namespace {

constexpr int kMaxGrid = 50;       // Optuna's n_steps
constexpr double kPrior = 1.0;     // the prior kernel's weight
constexpr double kEpsilon = 1e-12;  // added to each density before the ratio

// The grid a numerical parameter is binned onto: its size, and the point of an internal value.
struct Grid {
  int size = 0;
  double low = 0, step = 1;  // on the log scale for a log parameter
  bool log = false;
  int index(double v) const {
    if (size == 1) return 0;
    const double x = log ? std::log(v) : v;
    const auto i = static_cast<int>(std::ceil((x - low) / step - 0.5));  // nearest, ties down
    return std::clamp(i, 0, size - 1);
  }
};

Grid grid_of(const Param& p) {
  Grid g;
  g.size = kMaxGrid;
  if (p.kind == Param::Kind::integer && p.log)
    g.size = std::min(
        static_cast<int>(std::ceil(std::log(p.high - p.low + 1) / std::log(2.0))) + 1, kMaxGrid);
  else if (p.kind == Param::Kind::integer)  // a step (1 unless given): one point a value
    g.size = std::min(static_cast<int>(std::lround((p.high - p.low) / p.step)) + 1, kMaxGrid);
  g.log = p.log;
  g.low = p.log ? std::log(p.low) : p.low;
  const double high = p.log ? std::log(p.high) : p.high;
  g.step = g.size > 1 ? (high - g.low) / (g.size - 1) : 1;
  return g;
}

// How many of `values` fall on each of `size` points (categories or grid points).
std::vector<double> counts_on(const std::vector<double>& values, int size,
                              const std::function<int(double)>& point) {
  std::vector<double> counts(static_cast<size_t>(size), 0.0);
  for (double v : values) counts[static_cast<size_t>(point(v))] += 1;
  return counts;
}

// Optuna's ScottParzenEstimator on grid points 0..G−1 (IntDistribution(0, G − 1)): its density
// at each point. Kernels at the occupied points, weighted by their counts, and the prior.
std::vector<double> numerical_pdf(const std::vector<double>& counts) {
  const int size = static_cast<int>(counts.size());
  std::vector<double> obs, w;  // occupied points, ascending, and their counts
  for (int i = 0; i < size; ++i)
    if (const double c = counts[static_cast<size_t>(i)]; c > 0) obs.push_back(i), w.push_back(c);
  double n = 0, mean = 0;
  for (size_t k = 0; k < obs.size(); ++k) n += w[k], mean += obs[k] * w[k];
  mean /= n;
  double var = 0;
  for (size_t k = 0; k < obs.size(); ++k) var += (obs[k] - mean) * (obs[k] - mean) * w[k];
  double sigma = std::sqrt(var / std::max(1.0, n - 1));
  // the interquartile range from the cumulative counts (numpy's searchsorted, left and right;
  // n // 4 and n * 3 // 4 are integer divisions of the integer count)
  std::vector<double> cum(w.size());
  std::partial_sum(w.begin(), w.end(), cum.begin());
  const double q1 = std::floor(n / 4), q3 = std::floor(n * 3 / 4);
  const size_t i1 = static_cast<size_t>(std::lower_bound(cum.begin(), cum.end(), q1) - cum.begin());
  const size_t i3 = static_cast<size_t>(std::upper_bound(cum.begin(), cum.end(), q3) - cum.begin());
  const double iqr = obs[std::min(obs.size() - 1, i3)] - obs[std::min(obs.size() - 1, i1)];
  sigma = 1.059 * std::min(iqr / 1.34, sigma) * std::pow(n, -0.2);  // Scott's rule
  sigma = std::max(sigma, 0.5 / 1.64);
  const double low = 0, high = size - 1;
  std::vector<double> mus = obs, sigmas(obs.size(), sigma), weights = w;
  mus.push_back((low + high) / 2), sigmas.push_back(high - low + 1), weights.push_back(kPrior);
  const double total = n + kPrior;
  std::vector<double> pdf(static_cast<size_t>(size), 0.0);
  for (size_t k = 0; k < mus.size(); ++k) {
    const double mu = mus[k], s = sigmas[k];
    // each kernel: a normal's mass over the point's unit bin, truncated to [low − ½, high + ½]
    const double log_z = log_gauss_mass((low - 0.5 - mu) / s, (high + 0.5 - mu) / s);
    for (int x = 0; x < size; ++x)
      pdf[static_cast<size_t>(x)] += weights[k] / total *
                                     std::exp(log_gauss_mass((x - 0.5 - mu) / s,
                                                             (x + 0.5 - mu) / s) - log_z);
  }
  return pdf;
}

// The categorical estimator: kernel k (one per chosen category c_k, weight its count) puts
// 1 + prior / (K + 1) on c_k and prior / (K + 1) on every other category, renormalised; the
// prior kernel (weight 1) is uniform.
std::vector<double> categorical_pdf(const std::vector<double>& counts) {
  const size_t m = counts.size();
  double n = 0, kernels = 1;  // the prior's row
  for (double c : counts) n += c, kernels += c > 0;
  const double base = kPrior / kernels;
  const double row_sum = 1 + base * static_cast<double>(m);
  std::vector<double> pdf(m, 0.0);
  for (size_t c = 0; c < m; ++c) {
    if (counts[c] == 0) continue;
    for (size_t x = 0; x < m; ++x) pdf[x] += counts[c] * ((x == c ? 1 : 0) + base) / row_sum;
  }
  for (size_t x = 0; x < m; ++x) pdf[x] += kPrior / static_cast<double>(m);
  for (double& p : pdf) p /= n + kPrior;
  return pdf;
}

std::vector<double> density(const Param& p, const std::vector<double>& values) {
  if (p.kind == Param::Kind::categorical)
    return categorical_pdf(counts_on(values, static_cast<int>(p.choices.size()),
                                     [](double v) { return static_cast<int>(v); }));
  const Grid g = grid_of(p);
  return numerical_pdf(counts_on(values, g.size, [&](double v) { return g.index(v); }));
}

// The trials at or better than the ⌈q · n⌉-th best (Optuna's _QuantileFilter, ties kept), or,
// with several objectives, the best ⌈q · n⌉ by rank and hypervolume: their positions.
std::vector<size_t> top(const std::vector<std::vector<double>>& loss, double q) {
  std::vector<size_t> out;
  const size_t n = loss.size();
  if (q >= 1.0) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  const auto k = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  if (loss.front().size() > 1) {
    out = good_positions(loss, k);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<double> sorted;
  for (const auto& l : loss) sorted.push_back(l[0]);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   sorted.end());
  const double cutoff = sorted[k - 1];
  for (size_t i = 0; i < n; ++i)
    if (loss[i][0] <= cutoff) out.push_back(i);
  return out;
}

}  // namespace

double ped_anova_divergence(const Param& param, const std::vector<double>& top_values,
                            const std::vector<double>& region_values) {
  const std::vector<double> p_top = density(param, top_values);
  const std::vector<double> p_region = density(param, region_values);
  double d = 0;
  for (size_t x = 0; x < p_top.size(); ++x) {
    const double t = p_top[x] + kEpsilon, r = p_region[x] + kEpsilon;
    d += r * (t / r - 1) * (t / r - 1);
  }
  return d;
}

std::vector<std::pair<std::string, double>> param_importances(
    const std::vector<TrialRecord>& trials, const Space& space,
    const std::vector<Direction>& directions, const ImportanceOptions& o) {
  MASE_CHECK(0 < o.target_quantile && o.target_quantile < o.region_quantile &&
                 o.region_quantile <= 1,
             ConfigError, "[importance] expected 0 < target quantile < region quantile <= 1, got ",
             o.target_quantile, " and ", o.region_quantile);
  // the complete trials with every value finite, as losses (maximized objectives negated)
  std::vector<const TrialRecord*> done;
  std::vector<std::vector<double>> loss;
  for (const TrialRecord& r : trials) {
    if (r.trial.state != TrialState::complete) continue;
    std::vector<double> l;
    for (size_t k = 0; k < directions.size(); ++k) {
      const double v = k < r.trial.objectives.size() ? r.trial.objectives[k]
                                                     : (k == 0 ? r.trial.value : NAN);
      l.push_back(directions[k] == Direction::maximize ? -v : v);
    }
    if (!std::all_of(l.begin(), l.end(), [](double v) { return std::isfinite(v); })) continue;
    done.push_back(&r);
    loss.push_back(std::move(l));
  }
  std::vector<std::pair<std::string, double>> out;
  for (const Param& p : space.params()) out.emplace_back(p.name, 0.0);
  if (done.size() >= 2) {
    const std::vector<size_t> target = top(loss, o.target_quantile);
    const std::vector<size_t> region = top(loss, o.region_quantile);
    const double q = static_cast<double>(target.size()) / static_cast<double>(region.size());
    for (auto& [name, importance] : out) {
      const Param& p = space.at(name);
      if (p.cardinality() == 1) continue;  // a single value says nothing
      std::vector<double> t, r;
      for (size_t i : target) t.push_back(done[i]->trial.values.at(name));
      for (size_t i : region) r.push_back(done[i]->trial.values.at(name));
      importance = q * q * ped_anova_divergence(p, t, r);
    }
  }
  if (o.normalize) {
    double sum = 0;
    for (const auto& [name, v] : out) sum += v;
    for (auto& [name, v] : out) v = sum > 0 ? v / sum : 1.0 / static_cast<double>(out.size());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace mase::search
