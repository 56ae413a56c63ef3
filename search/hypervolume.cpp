// search/hypervolume.cpp — exact hypervolume in any dimension and greedy hypervolume subset
// selection, as Optuna 5.0's optuna/_hypervolume (wfg.py, hssp.py). Read search/hypervolume.h
// first. The arithmetic is Optuna's, in its order (products over objectives left to right, the
// same subtractions), so the greedy choices agree with Optuna's on the fixture; numpy's argmax
// rule (the first NaN, else the first largest) is kept too, since an infinite loss can make a
// contribution inf - inf.
#include "search/hypervolume.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/error.h"

namespace mase::search::hv {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// numpy.argmax: the first NaN if there is one, else the first of the largest.
size_t argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return i;
    if (v[i] > v[best]) best = i;
  }
  return best;
}

// The volume of the box between p and r: prod_d (r_d - p_d), left to right (numpy's prod).
double box(const Losses& p, const Losses& r) {
  double v = 1.0;
  for (size_t d = 0; d < r.size(); ++d) v *= r[d] - p[d];
  return v;
}

Losses elementwise_max(const Losses& a, const Losses& b) {  // numpy.maximum (no NaN here)
  Losses m(a.size());
  for (size_t d = 0; d < a.size(); ++d) m[d] = std::max(a[d], b[d]);
  return m;
}

bool lex_less(const Losses& a, const Losses& b) {
  for (size_t d = 0; d < a.size(); ++d)
    if (a[d] != b[d]) return a[d] < b[d];
  return false;
}

// numpy.unique(points, axis=0, return_index=True): the distinct points in lexicographic
// order and, for each, the position of its first occurrence.
std::vector<size_t> unique_lexsorted(const std::vector<Losses>& points) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lex_less(points[a], points[b]); });
  std::vector<size_t> first;
  for (size_t i : order)
    if (first.empty() || lex_less(points[first.back()], points[i])) first.push_back(i);
  return first;
}

// Optuna's _is_pareto_front_for_unique_sorted: which points of a list sorted by objective 0
// nothing before them dominates (later ones cannot). Two objectives: a new running minimum of
// objective 1. More: take the first point left, drop everything it weakly dominates, repeat.
std::vector<bool> pareto_of_sorted(const std::vector<Losses>& s) {
  const size_t n = s.size();
  std::vector<bool> on(n, false);
  if (n == 0) return on;
  const size_t d = s[0].size();
  if (d == 1) {
    on[0] = true;
  } else if (d == 2) {
    double cummin = s[0][1];
    on[0] = true;
    for (size_t i = 1; i < n; ++i) {
      on[i] = s[i][1] < cummin;
      cummin = std::min(cummin, s[i][1]);
    }
  } else {
    std::vector<size_t> left(n);
    std::iota(left.begin(), left.end(), size_t{0});
    while (!left.empty()) {
      const size_t top = left.front();
      on[top] = true;
      std::vector<size_t> keep;
      for (size_t j : left) {
        bool better_somewhere = false;  // objective 0 is sorted: it cannot save j
        for (size_t k = 1; k < d && !better_somewhere; ++k) better_somewhere = s[j][k] < s[top][k];
        if (better_somewhere) keep.push_back(j);
      }
      left = std::move(keep);
    }
  }
  return on;
}

}  // namespace

std::vector<int> nondomination_ranks(const std::vector<Losses>& points, size_t enough) {
  std::vector<int> rank(points.size(), -1);
  // the distinct points, lexicographically, each with every position it occurs at
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lex_less(points[a], points[b]); });
  std::vector<std::vector<size_t>> copies;
  for (size_t i : order) {
    if (copies.empty() || points[copies.back().front()] != points[i]) copies.emplace_back();
    copies.back().push_back(i);
  }
  const size_t goal = enough == 0 ? points.size() : std::min(enough, points.size());
  std::vector<size_t> left(copies.size());  // distinct points not ranked yet, still sorted
  std::iota(left.begin(), left.end(), size_t{0});
  size_t ranked = 0;
  for (int r = 0; ranked < goal; ++r) {
    std::vector<Losses> sorted;
    for (size_t c : left) sorted.push_back(points[copies[c].front()]);
    const std::vector<bool> on = pareto_of_sorted(sorted);
    std::vector<size_t> rest;
    for (size_t k = 0; k < left.size(); ++k) {
      if (!on[k]) {
        rest.push_back(left[k]);
        continue;
      }
      for (size_t i : copies[left[k]]) rank[i] = r;
      ranked += copies[left[k]].size();
    }
    left = std::move(rest);
  }
  return rank;
}

namespace {

// Two objectives, sorted by objective 0 (so objective 1 falls): a staircase of rectangles.
double hv_2d(const std::vector<Losses>& s, const Losses& r) {
  double hv = 0;
  for (size_t i = 0; i < s.size(); ++i)
    hv += (r[0] - s[i][0]) * ((i == 0 ? r[1] : s[i - 1][1]) - s[i][1]);
  return hv;
}

// Three objectives, sorted by objective 0 (Optuna's _compute_3d): on the grid of the points'
// x and y coordinates, cell (i, j) is covered up to the largest r_z - z of the points with
// x-rank <= i and y-rank <= j — a cumulative maximum along both axes; sum cell areas × heights.
double hv_3d(const std::vector<Losses>& s, const Losses& r) {
  const size_t n = s.size();
  std::vector<size_t> y_order(n);
  std::iota(y_order.begin(), y_order.end(), size_t{0});
  std::stable_sort(y_order.begin(), y_order.end(), [&](size_t a, size_t b) { return s[a][1] < s[b][1]; });
  std::vector<double> z(n * n, 0.0);  // z[i n + j]: row i the x-rank, column j the y-rank
  for (size_t j = 0; j < n; ++j) z[y_order[j] * n + j] = r[2] - s[y_order[j]][2];
  for (size_t i = 1; i < n; ++i)
    for (size_t j = 0; j < n; ++j) z[i * n + j] = std::max(z[i * n + j], z[(i - 1) * n + j]);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 1; j < n; ++j) z[i * n + j] = std::max(z[i * n + j], z[i * n + j - 1]);
  double hv = 0;
  for (size_t i = 0; i < n; ++i) {
    double row = 0;
    for (size_t j = 0; j < n; ++j) {
      const double y = s[y_order[j]][1], y_next = j + 1 < n ? s[y_order[j + 1]][1] : r[1];
      row += z[i * n + j] * (y_next - y);
    }
    hv += row * ((i + 1 < n ? s[i + 1][0] : r[0]) - s[i][0]);
  }
  return hv;
}

// WFG (Optuna's _compute_hv), points sorted by objective 0: HV = the last point's box plus,
// for each earlier point i, its *exclusive* volume — its box minus the hypervolume of the
// later points clipped to it (max(p_i, p_j): the part of p_j's box inside p_i's).
double hv_wfg(const std::vector<Losses>& s, const Losses& r) {
  if (s.size() == 1) return box(s[0], r);
  if (s.size() == 2) {  // inclusion-exclusion: |A| + |B| - |A and B|
    double hv1 = 1.0, hv2 = 1.0, both = 1.0;
    for (size_t d = 0; d < r.size(); ++d) {
      hv1 *= r[d] - s[0][d];
      hv2 *= r[d] - s[1][d];
      both *= r[d] - std::max(s[0][d], s[1][d]);
    }
    return hv1 + hv2 - both;
  }
  double exclusive_sum = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    std::vector<Losses> limited;
    for (size_t j = i + 1; j < s.size(); ++j) limited.push_back(elementwise_max(s[i], s[j]));
    if (limited.size() > 3) {  // drop what the clipping made dominated: it adds no volume
      const std::vector<bool> on = pareto_of_sorted(limited);
      std::vector<Losses> front;
      for (size_t j = 0; j < limited.size(); ++j)
        if (on[j]) front.push_back(std::move(limited[j]));
      limited = std::move(front);
    }
    exclusive_sum += box(s[i], r) - hv_wfg(limited, r);
  }
  return box(s.back(), r) + exclusive_sum;
}

// compute() once checked: assume_pareto skips the distinct-and-non-dominated filter (HSSP
// passes points of one rank), sorting by objective 0 only.
double compute_checked(const std::vector<Losses>& points, const Losses& r, bool assume_pareto) {
  if (points.empty()) return 0;
  std::vector<Losses> s;
  if (!assume_pareto) {
    std::vector<Losses> distinct;
    for (size_t i : unique_lexsorted(points)) distinct.push_back(points[i]);
    const std::vector<bool> on = pareto_of_sorted(distinct);
    for (size_t i = 0; i < distinct.size(); ++i)
      if (on[i]) s.push_back(std::move(distinct[i]));
  } else {
    s = points;
    std::stable_sort(s.begin(), s.end(), [](const Losses& a, const Losses& b) { return a[0] < b[0]; });
  }
  const double hv = r.size() == 2 ? hv_2d(s, r) : r.size() == 3 ? hv_3d(s, r) : hv_wfg(s, r);
  return std::isfinite(hv) ? hv : kInf;  // NaN from inf - inf: infinite, by submodularity
}

// Two objectives (Optuna's _solve_hssp_2d), points distinct and sorted by objective 0: each
// point's contribution is the rectangle between it and its "diagonal" corner, which starts at
// the reference and is pulled in as neighbours are chosen: a chosen point caps objective 0 of
// the points before it and objective 1 of those after it.
std::vector<size_t> hssp_2d(std::vector<Losses> loss, std::vector<size_t> pos, size_t k,
                            const Losses& r) {
  std::vector<Losses> corner(loss.size(), r);
  std::vector<size_t> chosen;
  std::vector<double> contribs;
  for (size_t i = 0; i < k; ++i) {
    contribs.resize(loss.size());
    for (size_t j = 0; j < loss.size(); ++j)
      contribs[j] = (corner[j][0] - loss[j][0]) * (corner[j][1] - loss[j][1]);
    const size_t m = argmax(contribs);
    chosen.push_back(pos[m]);
    const Losses picked = loss[m];
    loss.erase(loss.begin() + static_cast<std::ptrdiff_t>(m));
    pos.erase(pos.begin() + static_cast<std::ptrdiff_t>(m));
    corner.erase(corner.begin() + static_cast<std::ptrdiff_t>(m));
    for (size_t j = 0; j < m; ++j) corner[j][0] = std::min(picked[0], corner[j][0]);
    for (size_t j = m; j < corner.size(); ++j) corner[j][1] = std::min(picked[1], corner[j][1]);
  }
  return chosen;
}

// Optuna's _lazy_contribs_update: `contribs` hold upper bounds of each candidate's contribution
// to the chosen set S (hv_chosen = HV(S)). Tighten each with HV({last, p}) - HV({last}) (also
// a bound, by submodularity), then compute exactly, largest bound first, only those whose
// bound still reaches the largest exact contribution found so far.
void lazy_update(std::vector<double>& contribs, const std::vector<Losses>& cand,
                 const std::vector<Losses>& chosen, const Losses& r, double hv_chosen) {
  if (std::isinf(hv_chosen)) {  // no inf - inf below: every contribution counts as infinite
    std::fill(contribs.begin(), contribs.end(), kInf);
    return;
  }
  const size_t n = cand.size();
  std::vector<double> inclusive(n);
  for (size_t i = 0; i < n; ++i) {
    inclusive[i] = box(cand[i], r);
    const double bound = inclusive[i] - box(elementwise_max(cand[i], chosen.back()), r);
    contribs[i] = std::isnan(contribs[i]) || std::isnan(bound) ? std::nan("")
                                                                : std::min(contribs[i], bound);
  }
  std::vector<size_t> order(n);  // numpy.argsort(-contribs): largest first, NaN last
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return !std::isnan(contribs[a]) && (std::isnan(contribs[b]) || contribs[a] > contribs[b]);
  });
  const bool incremental = r.size() <= 3;  // HV is cheap there: HV(S + p) - HV(S)
  double max_contrib = 0;
  std::vector<Losses> with = chosen;
  with.emplace_back();
  for (size_t i : order) {
    if (std::isinf(inclusive[i])) {
      max_contrib = contribs[i] = kInf;
      continue;
    }
    if (contribs[i] < max_contrib) continue;  // its bound is beaten already
    if (incremental) {
      with.back() = cand[i];
      contribs[i] = compute_checked(with, r, /*assume_pareto=*/true) - hv_chosen;
    } else {  // decremental: |p's box| - HV(S clipped to p's box)
      std::vector<Losses> clipped;
      for (const Losses& s : chosen) clipped.push_back(elementwise_max(cand[i], s));
      contribs[i] = inclusive[i] - compute_checked(clipped, r, /*assume_pareto=*/false);
    }
    max_contrib = max_contrib > contribs[i] ? max_contrib : contribs[i];  // Python's max
  }
}

// Optuna's _solve_hssp_on_unique_loss_vals: points distinct, lexicographically sorted;
// returns entries of pos.
std::vector<size_t> hssp_distinct(std::vector<Losses> loss, const std::vector<size_t>& pos,
                                  size_t k, const Losses& r) {
  if (!std::all_of(r.begin(), r.end(), [](double x) { return std::isfinite(x); }))
    return {pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(k)};
  if (pos.size() == k) return pos;
  if (r.size() == 2) return hssp_2d(std::move(loss), pos, k, r);
  std::vector<double> contribs(loss.size());
  for (size_t j = 0; j < loss.size(); ++j) contribs[j] = box(loss[j], r);
  std::vector<size_t> index(loss.size());
  std::iota(index.begin(), index.end(), size_t{0});
  std::vector<size_t> chosen;
  std::vector<Losses> chosen_points;
  double hv = 0;  // HV of the chosen, as the sum of their contributions when chosen
  for (size_t step = 0; step < k; ++step) {
    const size_t m = argmax(contribs);
    hv += contribs[m];
    chosen.push_back(pos[index[m]]);
    chosen_points.push_back(loss[m]);
    contribs.erase(contribs.begin() + static_cast<std::ptrdiff_t>(m));
    index.erase(index.begin() + static_cast<std::ptrdiff_t>(m));
    loss.erase(loss.begin() + static_cast<std::ptrdiff_t>(m));
    if (step + 1 == k) break;
    lazy_update(contribs, loss, chosen_points, r, hv);
  }
  return chosen;
}

void check_dims(const std::vector<Losses>& points, size_t d, const char* what) {
  for (size_t i = 0; i < points.size(); ++i)
    MASE_CHECK(points[i].size() == d, ConfigError, "[hypervolume] ", what, " expected points of ",
               d, " objectives (the reference's), got ", points[i].size(), " in point ", i);
}

}  // namespace

double compute(const std::vector<Losses>& points, const Losses& reference) {
  check_dims(points, reference.size(), "compute");
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t d = 0; d < reference.size(); ++d)
      MASE_CHECK(points[i][d] <= reference[d], ConfigError, "[hypervolume] expected every point "
                 "at or below the reference point, got point ", i, " with ", points[i][d],
                 " > ", reference[d], " in objective ", d);
  if (!std::all_of(reference.begin(), reference.end(), [](double x) { return std::isfinite(x); }))
    return kInf;
  return compute_checked(points, reference, /*assume_pareto=*/false);
}

Losses reference_point(const std::vector<Losses>& points) {
  MASE_CHECK(!points.empty(), ConfigError, "[hypervolume] reference_point expected points, got none");
  check_dims(points, points[0].size(), "reference_point");
  Losses worst = points[0];
  for (const Losses& p : points)
    for (size_t d = 0; d < p.size(); ++d) worst[d] = std::max(worst[d], p[d]);
  Losses r(worst.size());
  for (size_t d = 0; d < r.size(); ++d) {
    r[d] = std::max(1.1 * worst[d], 0.9 * worst[d]);  // outwards, whatever the sign
    if (r[d] == 0) r[d] = 1e-12;
  }
  return r;
}

std::vector<size_t> hssp(const std::vector<Losses>& points, const std::vector<size_t>& labels,
                         size_t subset_size, const Losses& reference) {
  check_dims(points, reference.size(), "hssp");
  MASE_CHECK(labels.size() == points.size(), ConfigError, "[hypervolume] hssp expected a label "
             "per point (", points.size(), "), got ", labels.size());
  MASE_CHECK(subset_size >= 1 && subset_size <= points.size(), ConfigError, "[hypervolume] hssp "
             "expected a subset size in 1..", points.size(), ", got ", subset_size);
  if (subset_size == points.size()) return labels;
  const std::vector<size_t> first = unique_lexsorted(points);
  std::vector<size_t> out;
  if (first.size() < subset_size) {  // every distinct point, then copies in the order given
    std::vector<bool> chosen(points.size(), false);
    for (size_t i : first) chosen[i] = true;
    size_t copies = subset_size - first.size();
    for (size_t i = 0; i < points.size() && copies > 0; ++i)
      if (!chosen[i]) chosen[i] = true, --copies;
    for (size_t i = 0; i < points.size(); ++i)
      if (chosen[i]) out.push_back(labels[i]);
    return out;
  }
  std::vector<Losses> distinct;
  for (size_t i : first) distinct.push_back(points[i]);
  for (size_t i : hssp_distinct(std::move(distinct), first, subset_size, reference))
    out.push_back(labels[i]);
  return out;
}

}  // namespace mase::search::hv
