// search/nsga2.cpp — NSGA-II: non-domination fronts, crowding distance, elite selection, and
// the sampler that breeds children from them. Read search/nsga2.h first.
#include "search/nsga2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/error.h"
#include "search/hypervolume.h"
#include "search/tpe.h"  // single_valued

namespace mase::search {

namespace nsga2 {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

bool has_every_value(const Point& p, size_t objectives) {
  return p.size() == objectives &&
         std::none_of(p.begin(), p.end(), [](double v) { return std::isnan(v); });
}

bool dominates(const Point& a, const Point& b, const std::vector<Direction>& directions) {
  bool better_somewhere = false;
  for (size_t i = 0; i < directions.size(); ++i) {
    // as losses: lower is better in every objective
    const double x = directions[i] == Direction::maximize ? -a[i] : a[i];
    const double y = directions[i] == Direction::maximize ? -b[i] : b[i];
    if (x > y) return false;
    better_somewhere = better_somewhere || x < y;
  }
  return better_somewhere;
}

// Peeling: front 0 is every point nothing dominates; remove it, and what nothing of the rest
// dominates is front 1; and so on — hv::nondomination_ranks, one pass a front over the distinct
// points in lexicographic order (the first one left is on the front, what it weakly dominates
// is not), as Optuna ranks them for NSGA-II and TPE alike.
std::vector<std::vector<size_t>> fronts(const std::vector<Point>& points,
                                        const std::vector<Direction>& directions, size_t enough) {
  // NaN orders nothing: dominance among NaNs can go round a cycle, and the peeling never ends
  for (size_t i = 0; i < points.size(); ++i)
    MASE_CHECK(has_every_value(points[i], points[i].size()), ConfigError,
               "[nsga2] fronts expected values that are not NaN, got one in point ", i);
  // as losses (a maximized objective negated), ranked as Optuna ranks them
  std::vector<hv::Losses> loss;
  for (const Point& p : points) {
    hv::Losses l(directions.size());
    for (size_t d = 0; d < l.size(); ++d) l[d] = directions[d] == Direction::maximize ? -p[d] : p[d];
    loss.push_back(std::move(l));
  }
  const std::vector<int> rank = hv::nondomination_ranks(loss, enough);
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < points.size(); ++i) {  // each front in the order the points came
    if (rank[i] < 0) continue;                   // beyond `enough`: not ranked
    if (out.size() <= static_cast<size_t>(rank[i])) out.resize(static_cast<size_t>(rank[i]) + 1);
    out[static_cast<size_t>(rank[i])].push_back(i);
  }
  return out;
}

namespace {

// Optuna's crowding distance, computed as its code does *including the order it leaves the
// list in* (it sorts the list by each objective in turn, stably): the elite's tie-breaking
// depends on that order. `order` is reordered in place; the distances are by point index.
std::vector<double> crowding_in_place(const std::vector<Point>& points, std::vector<size_t>& order) {
  std::vector<double> distance(points.size(), 0.0);
  if (order.empty()) return distance;
  const size_t m = points[order[0]].size();
  for (size_t i = 0; i < m; ++i) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points[a][i] < points[b][i]; });
    const double lo = points[order.front()][i], hi = points[order.back()][i];
    if (lo == hi) continue;  // every point equal in this objective: it tells none apart
    // the values sorted, with −inf before the first and +inf after the last
    std::vector<double> v = {-kInf};
    for (size_t k : order) v.push_back(points[k][i]);
    v.push_back(kInf);
    // the range of the finite values (the first value above −inf, the last below +inf)
    const double v_min = *std::find_if(v.begin(), v.end(), [](double x) { return x != -kInf; });
    const double v_max = *std::find_if(v.rbegin(), v.rend(), [](double x) { return x != kInf; });
    double width = v_max - v_min;
    if (!(width > 0)) width = 1.0;  // one finite value, or none
    for (size_t j = 0; j < order.size(); ++j) {
      const double gap = v[j] == v[j + 2] ? 0.0 : v[j + 2] - v[j];  // inf − inf counts as 0
      distance[order[j]] += gap / width;
    }
  }
  return distance;
}

}  // namespace

std::vector<double> crowding_distances(const std::vector<Point>& points,
                                       const std::vector<size_t>& members) {
  std::vector<size_t> order = members;
  const std::vector<double> by_index = crowding_in_place(points, order);
  std::vector<double> out;
  for (size_t k : members) out.push_back(by_index[k]);
  return out;
}

std::vector<std::vector<size_t>> constrained_fronts(const std::vector<Point>& points,
                                                    const std::vector<Direction>& directions,
                                                    const std::vector<double>& penalty) {
  MASE_CHECK(penalty.size() == points.size(), ConfigError, "[nsga2] expected a penalty for each "
             "of the ", points.size(), " points, got ", penalty.size());
  std::vector<size_t> feasible, infeasible;
  for (size_t i = 0; i < points.size(); ++i) (penalty[i] > 0 ? infeasible : feasible).push_back(i);
  std::vector<Point> sub;
  for (size_t i : feasible) sub.push_back(points[i]);
  std::vector<std::vector<size_t>> out = fronts(sub, directions);
  for (auto& front : out)
    for (size_t& k : front) k = feasible[k];  // back to indices into `points`
  // then one front per distinct penalty, smallest first, each in the order the points came
  std::vector<double> levels;
  for (size_t i : infeasible) levels.push_back(penalty[i]);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  const size_t first = out.size();
  out.resize(first + levels.size());
  for (size_t i : infeasible) {
    const auto level = std::lower_bound(levels.begin(), levels.end(), penalty[i]) - levels.begin();
    out[first + static_cast<size_t>(level)].push_back(i);
  }
  return out;
}

bool constrained_dominates(const Point& a, double penalty_a, const Point& b, double penalty_b,
                           const std::vector<Direction>& directions) {
  if (penalty_a <= 0 && penalty_b <= 0) return dominates(a, b, directions);
  if (penalty_a <= 0 || penalty_b <= 0) return penalty_a <= 0;  // the feasible one wins
  return penalty_a < penalty_b;  // both infeasible: the smaller violation
}

std::vector<size_t> elite(const std::vector<Point>& points, const std::vector<Direction>& directions,
                          size_t population_size, const std::vector<double>& penalty) {
  std::vector<size_t> chosen;
  for (std::vector<size_t>& front : penalty.empty() ? fronts(points, directions)
                                                    : constrained_fronts(points, directions,
                                                                         penalty)) {
    if (chosen.size() + front.size() < population_size) {
      chosen.insert(chosen.end(), front.begin(), front.end());
      continue;
    }
    // The front that does not fit: largest crowding distance first. Optuna sorts by distance
    // ascending (stably, after its per-objective sorts) and reverses the list, so among equal
    // distances the later one in that order comes first.
    const std::vector<double> d = crowding_in_place(points, front);
    std::stable_sort(front.begin(), front.end(), [&](size_t a, size_t b) { return d[a] < d[b]; });
    std::reverse(front.begin(), front.end());
    const size_t n = population_size - chosen.size();
    chosen.insert(chosen.end(), front.begin(), front.begin() + static_cast<std::ptrdiff_t>(n));
    break;
  }
  return chosen;
}

double hypervolume(const std::vector<Point>& points, const std::vector<Direction>& directions,
                   const Point& reference) {
  MASE_CHECK(directions.size() == 2, ConfigError,
             "[nsga2] hypervolume expected two objectives, got ", directions.size());
  MASE_CHECK(reference.size() == 2, ConfigError,
             "[nsga2] hypervolume expected a reference point of 2 values, got ", reference.size());
  for (const Point& p : points)
    MASE_CHECK(p.size() == 2, ConfigError,
               "[nsga2] hypervolume expected points of 2 values, got one of ", p.size());
  auto loss = [&](const Point& p, size_t i) {
    return directions[i] == Direction::maximize ? -p[i] : p[i];
  };
  const double r0 = loss(reference, 0), r1 = loss(reference, 1);
  std::vector<hv::Losses> inside;  // the points better than the reference in both
  for (const Point& p : points)
    if (loss(p, 0) < r0 && loss(p, 1) < r1) inside.push_back({loss(p, 0), loss(p, 1)});
  return hv::compute(inside, {r0, r1});  // for two objectives a staircase of rectangles
}

}  // namespace nsga2

namespace {

// The draws of trial n's child: stream kStream + n of the seed's Philox (search/sampler.h);
// generation 0 and mutated parameters use RandomSampler's draws of trial n instead.
constexpr uint64_t kStream = uint64_t{0x4e534741} << 32;  // "NSGA"

bool complete(const Trial& t) { return t.state == TrialState::complete; }

}  // namespace

Nsga2Sampler::Nsga2Sampler(uint64_t seed, Nsga2Options options) : seed_(seed), options_(options) {
  MASE_CHECK(options_.population_size >= 2, ConfigError,
             "[nsga2] expected a population of at least 2, got ", options_.population_size);
  for (double p : {options_.crossover_prob, options_.swapping_prob})
    MASE_CHECK(p >= 0 && p <= 1, ConfigError, "[nsga2] expected probabilities in [0, 1], got ", p);
}

std::string Nsga2Sampler::name() const {
  return options_.population_size == Nsga2Options{}.population_size
             ? "nsga2"
             : cat("nsga2:", options_.population_size);
}

void Nsga2Sampler::set_directions(const std::vector<Direction>& directions) {
  MASE_CHECK(!directions.empty(), ConfigError, "[nsga2] expected at least one objective, got none");
  directions_ = directions;
}

int64_t Nsga2Sampler::next_generation(const std::vector<Trial>& history) const {
  // the newest generation any complete trial belongs to, and how many complete trials it has
  int64_t newest = 0, count = 0;
  for (const Trial& t : history) {
    if (!complete(t) || t.generation < newest) continue;
    count = t.generation > newest ? 1 : count + 1;
    newest = t.generation;
  }
  return count < options_.population_size ? newest : newest + 1;
}

std::vector<size_t> Nsga2Sampler::parents(const std::vector<Trial>& history,
                                          int64_t generation) const {
  // parents(g) = elite of (generation g−1's complete trials, then parents(g−1)), parents(0) = ∅;
  // history is in trial order, so indices sort as trial numbers do
  std::vector<size_t> pool;
  for (int64_t g = 0; g < generation; ++g) {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < history.size(); ++i)
      if (complete(history[i]) && history[i].generation == g) candidates.push_back(i);
    candidates.insert(candidates.end(), pool.begin(), pool.end());
    std::vector<nsga2::Point> points;
    for (size_t i : candidates) {
      const Trial& t = history[i];
      const auto given = std::count_if(t.objectives.begin(), t.objectives.end(),
                                       [](double v) { return !std::isnan(v); });
      MASE_CHECK(nsga2::has_every_value(t.objectives, directions_.size()), ConfigError,
                 "[nsga2] trial ", t.number, " expected ", directions_.size(),
                 " objective values, got ", given, " (a complete trial without every value row "
                 "in trial_values: fail it, or delete it)");
      points.push_back(t.objectives);
    }
    // a population where any trial has constraints is ranked feasible first (Optuna's
    // _is_constrained_optimization): a trial without them counts as feasible
    std::vector<double> penalty;
    if (std::any_of(candidates.begin(), candidates.end(),
                    [&](size_t i) { return !history[i].constraints.empty(); }))
      for (size_t i : candidates) penalty.push_back(violation(history[i]));
    std::vector<size_t> next;
    for (size_t k : nsga2::elite(points, directions_, static_cast<size_t>(options_.population_size),
                                 penalty))
      next.push_back(candidates[k]);
    // in trial order, as Optuna reads a generation's parents back from its cache: the order
    // the next generation's elite selection sees them in (it breaks ties by position)
    std::sort(next.begin(), next.end());
    pool = std::move(next);
  }
  return pool;
}

std::optional<Values> Nsga2Sampler::sample(const Space& space, const std::vector<Trial>& history,
                                           int64_t number) {
  const Values fresh = *RandomSampler(seed_).sample(space, history, number);
  const std::vector<size_t> pool = parents(history, next_generation(history));
  if (pool.empty()) return fresh;  // generation 0: at random

  const uint64_t stream = kStream + static_cast<uint64_t>(number);
  uint64_t draw = 0;
  auto u = [&] { return unit_uniform(seed_, stream, draw++); };
  auto pick = [&](const std::vector<size_t>& from) {
    return from[std::min(static_cast<size_t>(u() * static_cast<double>(from.size())),
                         from.size() - 1)];
  };
  // binary tournament: of two random candidates, the first if it dominates the second —
  // constrained-dominates when any parent has constraints (Optuna's _constrained_dominates)
  const bool constrained = std::any_of(pool.begin(), pool.end(), [&](size_t i) {
    return !history[i].constraints.empty();
  });
  auto tournament = [&](const std::vector<size_t>& from) {
    const size_t a = pick(from), b = pick(from);
    const Trial &ta = history[a], &tb = history[b];
    const bool first_wins =
        constrained ? nsga2::constrained_dominates(ta.objectives, violation(ta), tb.objectives,
                                                   violation(tb), directions_)
                    : nsga2::dominates(ta.objectives, tb.objectives, directions_);
    return first_wins ? a : b;
  };

  Values child;
  if (u() < options_.crossover_prob) {
    const size_t first = tournament(pool);
    std::vector<size_t> rest;
    for (size_t i : pool)
      if (i != first) rest.push_back(i);
    const size_t second = rest.empty() ? first : tournament(rest);
    for (const Param& p : space.params()) {
      // Optuna's uniform crossover: rand >= swapping_prob takes the second parent's value
      const bool from_second = u() >= options_.swapping_prob;
      const Values& parent = history[from_second ? second : first].values;
      if (auto it = parent.find(p.name); it != parent.end()) child[p.name] = it->second;
    }
  } else {
    child = history[pick(pool)].values;
  }
  // mutation: each parameter with probability 1/(number of parameters), drawn afresh. Those of
  // one value do not count: Optuna's relative search space leaves them out, so its rate is
  // 1/(number of the others).
  const auto varying = std::count_if(space.params().begin(), space.params().end(),
                                     [](const Param& p) { return !single_valued(p); });
  const double mutation_prob = 1.0 / std::max<double>(1.0, static_cast<double>(varying));
  Values out;
  for (const Param& p : space.params()) {
    auto it = child.find(p.name);
    const bool keep = u() >= mutation_prob && it != child.end() && p.contains(it->second);
    out[p.name] = keep ? it->second : fresh.at(p.name);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Nsga2Sampler::trial_attrs(
    const std::vector<Trial>& history, int64_t) const {
  return {{"NSGAIISampler:generation", std::to_string(next_generation(history))}};
}

}  // namespace mase::search
