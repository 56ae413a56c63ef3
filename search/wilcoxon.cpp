// search/wilcoxon.cpp — the signed-rank test (SciPy's three methods) and Optuna's
// WilcoxonPruner. Read search/wilcoxon.h first.
#include "search/wilcoxon.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/error.h"

namespace mase::search {

void WilcoxonPruner::validate() const {
  MASE_CHECK(p_threshold >= 0 && p_threshold <= 1, ConfigError,
             "[pruner] expected a p threshold in [0, 1], got ", p_threshold);
  MASE_CHECK(n_startup_steps >= 0, ConfigError, "[pruner] expected n_startup_steps >= 0, got ",
             n_startup_steps);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The standard normal's cdf (SciPy's special.ndtr).
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Ranks of |d| (1-based, ties averaged: SciPy's rankdata "average") and Σ (t³ − t) over the tie
// groups of sizes t.
struct Ranks {
  std::vector<double> rank;
  double tie_term = 0;
  bool ties = false;
};

Ranks abs_ranks(const std::vector<double>& d) {
  const size_t n = d.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::fabs(d[a]) < std::fabs(d[b]); });
  Ranks r;
  r.rank.resize(n);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;  // [i, j): one group of equal |d|
    while (j < n && std::fabs(d[order[j]]) == std::fabs(d[order[i]])) ++j;
    const double average = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) r.rank[order[k]] = average;
    const auto t = static_cast<double>(j - i);
    r.tie_term += t * t * t - t;
    r.ties = r.ties || j - i > 1;
    i = j;
  }
  return r;
}

// W+ with zero_method "zsplit": ranks of the positive d, and half those of the zeros.
double w_plus(const std::vector<double>& d, const std::vector<double>& rank) {
  double w = 0;
  for (size_t i = 0; i < d.size(); ++i) w += d[i] > 0 ? rank[i] : d[i] == 0 ? rank[i] / 2 : 0;
  return w;
}

// The exact null distribution of W+ for n untied, non-zero differences: P(W+ = k), k = 0 ..
// n(n+1)/2. Adding rank k to the ranks 1..k−1 either leaves W+ (its d negative) or adds k.
std::vector<double> exact_null(size_t n) {
  std::vector<double> c{1.0};
  for (size_t k = 1; k <= n; ++k) {
    std::vector<double> next(k * (k + 1) / 2 + 1, 0.0);
    for (size_t w = 0; w < c.size(); ++w) {
      next[w] += c[w] * 0.5;
      next[w + k] += c[w] * 0.5;
    }
    c = std::move(next);
  }
  return c;
}

double exact_p(double w, size_t n, Alternative alt) {
  const std::vector<double> pmf = exact_null(n);
  const double mean = static_cast<double>(n * (n + 1)) / 4;
  const auto sum = [&](int64_t from, int64_t to) {  // Σ pmf[from..to], clipped
    double s = 0;
    for (int64_t k = std::max<int64_t>(from, 0);
         k <= std::min<int64_t>(to, static_cast<int64_t>(pmf.size()) - 1); ++k)
      s += pmf[static_cast<size_t>(k)];
    return s;
  };
  const int64_t top = static_cast<int64_t>(pmf.size()) - 1;
  // SciPy sums the shorter tail and takes the other as 1 − it
  if (alt == Alternative::less) {  // cdf(⌈w⌉)
    const auto k = static_cast<int64_t>(std::ceil(w));
    return static_cast<double>(k) <= mean ? sum(0, k) : 1 - sum(k + 1, top);
  }
  const auto k = static_cast<int64_t>(std::floor(w));  // sf(⌊w⌋) = P(W+ >= k)
  return static_cast<double>(k) <= mean ? sum(k, top) : 1 - sum(0, k - 1);
}

// Every sign flip of d (2^n of them), as SciPy's permutation test enumerates them for n <= 13:
// the share whose W+ is at least as unfavourable as the observed one.
double permutation_p(const std::vector<double>& d, const std::vector<double>& rank, double w,
                     Alternative alt) {
  const size_t n = d.size();
  const double gamma = std::fabs(100 * std::numeric_limits<double>::epsilon() * w);
  int64_t count = 0;
  for (uint32_t flips = 0; flips < (1u << n); ++flips) {
    double null_w = 0;
    for (size_t i = 0; i < n; ++i) {
      const double di = flips >> i & 1 ? -d[i] : d[i];
      null_w += di > 0 ? rank[i] : di == 0 ? rank[i] / 2 : 0;
    }
    count += alt == Alternative::less ? null_w <= w + gamma : null_w >= w - gamma;
  }
  return static_cast<double>(count) / static_cast<double>(1u << n);
}

}  // namespace

double signed_rank_p(const std::vector<double>& d, Alternative alt) {
  MASE_CHECK(d.size() >= 2, ConfigError, "[wilcoxon] expected 2 or more differences, got ",
             d.size());
  MASE_CHECK(std::all_of(d.begin(), d.end(), [](double v) { return std::isfinite(v); }),
             ConfigError, "[wilcoxon] expected finite differences, got a NaN or an infinity");
  const size_t n = d.size();
  const Ranks r = abs_ranks(d);
  const double w = w_plus(d, r.rank);
  const bool zeros = std::any_of(d.begin(), d.end(), [](double v) { return v == 0; });
  if (n <= 50 && !r.ties && !zeros) return exact_p(w, n, alt);
  if (n <= 13) return permutation_p(d, r.rank, w, alt);
  const auto nn = static_cast<double>(n);
  const double mean = nn * (nn + 1) * 0.25;
  const double se = std::sqrt((nn * (nn + 1) * (2 * nn + 1) - r.tie_term / 2) / 24);
  if (se == 0) return kNaN;  // every difference zero: 0 / 0 in SciPy too
  const double z = (w - mean) / se;
  return alt == Alternative::less ? normal_cdf(z) : normal_cdf(-z);
}

bool should_prune(const WilcoxonPruner& pruner, const std::vector<TrialRecord>& trials,
                  const TrialRecord& self, Direction direction) {
  const auto finite = [](const std::map<int64_t, double>& m) {
    return std::all_of(m.begin(), m.end(), [](const auto& kv) { return std::isfinite(kv.second); });
  };
  if (self.intermediate.empty() || !finite(self.intermediate)) return false;
  const TrialRecord* best = best_complete(trials, direction);
  if (!best || best->intermediate.empty() || !finite(best->intermediate)) return false;
  std::vector<double> diff;  // on the steps both reported (steps only one has are ignored)
  for (const auto& [step, v] : self.intermediate)
    if (auto it = best->intermediate.find(step); it != best->intermediate.end())
      diff.push_back(v - it->second);
  if (static_cast<int64_t>(diff.size()) < std::max<int64_t>(2, pruner.n_startup_steps))
    return false;
  const auto mean = [](const std::map<int64_t, double>& m) {
    double s = 0;
    for (const auto& [step, v] : m) s += v;
    return s / static_cast<double>(m.size());
  };
  const bool maximize = direction == Direction::maximize;
  // means over every report of each, not just the common steps (Optuna's)
  const bool at_least_as_good = maximize ? mean(best->intermediate) <= mean(self.intermediate)
                                         : mean(best->intermediate) >= mean(self.intermediate);
  const double p = signed_rank_p(diff, maximize ? Alternative::less : Alternative::greater);
  return p < pruner.p_threshold && !at_least_as_good;
}

}  // namespace mase::search
