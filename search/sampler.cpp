// search/sampler.cpp — the random and grid samplers and the helpers every sampler shares.
// Read search/sampler.h first; TPE is search/tpe.cpp.
#include "search/sampler.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <unordered_set>

#include "runtime/error.h"
#include "runtime/philox.h"
#include "search/nsga2.h"
#include "search/tpe.h"

namespace mase::search {

const char* to_string(TrialState s) {
  switch (s) {
    case TrialState::running: return "running";
    case TrialState::complete: return "complete";
    case TrialState::failed: return "failed";
    case TrialState::pruned: return "pruned";
  }
  return "?";
}

TrialState trial_state_from(const std::string& s) {
  for (TrialState t : {TrialState::running, TrialState::complete, TrialState::failed,
                       TrialState::pruned})
    if (s == to_string(t)) return t;
  throw ConfigError(cat("[study] expected a trial state (running, complete, failed, pruned), got '",
                        s, "'"));
}

double unit_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  // Block (stream, i) of Philox: counter = i, key = seed mixed with the stream, so the streams
  // of different trials never share a block. 53 bits -> a double in [0, 1).
  auto w = philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                          static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                         {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  uint64_t bits = (uint64_t{w[0]} << 21) ^ (w[1] >> 11);  // 32 + 21 = 53 bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

double draw_uniform(const Param& p, double u) {
  switch (p.kind) {
    case Param::Kind::categorical: {
      auto n = static_cast<int64_t>(p.choices.size());
      return static_cast<double>(std::min(static_cast<int64_t>(u * n), n - 1));
    }
    case Param::Kind::integer: {
      if (p.log) {
        // Log-uniform over [low - 1/2, high + 1/2], rounded: each integer gets the share of
        // log-space its rounding interval covers (Optuna's convention).
        double lo = std::log(p.low - 0.5), hi = std::log(p.high + 0.5);
        double x = std::round(std::exp(lo + u * (hi - lo)));
        return std::clamp(x, p.low, p.high);
      }
      int64_t n = p.cardinality();
      int64_t k = std::min(static_cast<int64_t>(u * n), n - 1);
      return p.low + p.step * static_cast<double>(k);
    }
    case Param::Kind::real: {
      if (p.log) {
        double lo = std::log(p.low), hi = std::log(p.high);
        return std::clamp(std::exp(lo + u * (hi - lo)), p.low, p.high);
      }
      return std::clamp(p.low + u * (p.high - p.low), p.low, p.high);
    }
  }
  return 0;
}

void Sampler::set_directions(const std::vector<Direction>& directions) {
  MASE_CHECK(directions.size() == 1, ConfigError, "[sampler] ", name(), " ranks one objective, got ",
             directions.size(), " (for several objectives use tpe, tpe-independent, tpe-multivariate, "
             "nsga2, random or grid)");
}

std::vector<std::pair<std::string, std::string>> Sampler::trial_attrs(const std::vector<Trial>&,
                                                                      int64_t) const {
  return {};
}

std::optional<Values> RandomSampler::sample(const Space& space, const std::vector<Trial>&,
                                            int64_t number) {
  // Parameter j of trial n uses element j of stream n: independent of every other trial.
  Values v;
  uint64_t j = 0;
  for (const Param& p : space.params())
    v[p.name] = draw_uniform(p, unit_uniform(seed_, static_cast<uint64_t>(number), j++));
  return v;
}

// The grid is a mixed-radix number: parameter 0 (first by name) is the most significant digit.
// A digit is the choice index (categorical) or (value - low) / step (integer).
Values grid_point(const Space& space, int64_t index) {
  Values v;
  const auto& ps = space.params();
  for (size_t j = ps.size(); j-- > 0;) {
    int64_t n = ps[j].cardinality();
    int64_t digit = index % n;
    index /= n;
    v[ps[j].name] = ps[j].kind == Param::Kind::categorical
                        ? static_cast<double>(digit)
                        : ps[j].low + ps[j].step * static_cast<double>(digit);
  }
  return v;
}

// The inverse of grid_point, or -1 if `v` is not a point of the grid.
static int64_t grid_index(const Space& space, const Values& v) {
  int64_t index = 0;
  for (const Param& p : space.params()) {
    auto it = v.find(p.name);
    if (it == v.end() || !p.contains(it->second)) return -1;
    double digit = p.kind == Param::Kind::categorical ? it->second : (it->second - p.low) / p.step;
    index = index * p.cardinality() + static_cast<int64_t>(std::llround(digit));
  }
  return index;
}

void GridSampler::check_space(const Space& space) {
  for (const Param& p : space.params())
    MASE_CHECK(p.kind != Param::Kind::real, ConfigError, "[grid] parameter '", p.name,
               "' is continuous: a grid needs every parameter finite (make it categorical or integer)");
  const int64_t n = space.grid_size();
  constexpr int64_t kMaxGrid = int64_t{1} << 20;  // the shuffled order is rebuilt on each ask
  MASE_CHECK(n <= kMaxGrid, ConfigError, "[grid] expected at most ", kMaxGrid, " grid points, got ",
             n == INT64_MAX ? std::string("more than 2^63") : std::to_string(n),
             " (use the random or tpe sampler for a space this large)");
}

std::optional<Values> GridSampler::sample(const Space& space, const std::vector<Trial>& history,
                                          int64_t) {
  check_space(space);
  const int64_t n = space.grid_size();

  // Points already taken: by a finished trial, or by a running one (maybe in another process).
  // A point whose trials all failed is free again, but only after every point never tried: a
  // point that fails by its own error must not starve the rest of the grid (the search stops
  // after three failures in a row, which then come at the end). A killed worker's point comes
  // back this way too, so none is lost (tests/search/test_study_kill.cpp); an interrupted
  // trial is retried by ask() before the sampler is asked (search/trial_queue.h).
  std::unordered_set<int64_t> taken, failed;
  for (const Trial& t : history) {
    const int64_t index = grid_index(space, t.values);
    if (t.state != TrialState::failed) taken.insert(index);
    else failed.insert(index);
  }

  // The visiting order: a Fisher-Yates shuffle of 0..n-1 drawn from the seed alone, so every
  // process computes the same order and the first free point is the same for all of them.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(unit_uniform(seed_, ~uint64_t{0}, static_cast<uint64_t>(i)) *
                                  static_cast<double>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(std::min(j, i))]);
  }
  for (int64_t index : order)  // first the points never tried
    if (!taken.count(index) && !failed.count(index)) return grid_point(space, index);
  for (int64_t index : order)  // then the failed ones, again
    if (!taken.count(index)) return grid_point(space, index);
  return std::nullopt;  // every point has been tried
}

double violation(const Trial& trial) {
  double sum = 0;
  for (const auto& [name, v] : trial.constraints)
    if (v > 0) sum += v;
  return sum;
}

std::unique_ptr<Sampler> make_sampler(const std::string& name, uint64_t seed) {
  if (name == "random") return std::make_unique<RandomSampler>(seed);
  if (name == "grid") return std::make_unique<GridSampler>(seed);
  // multivariate for one objective, independent for several: Optuna's TPESampler()
  if (name == "tpe") return std::make_unique<TpeSampler>(seed);
  if (name == "tpe-independent") {
    TpeOptions independent;
    independent.multivariate = false;
    return std::make_unique<TpeSampler>(seed, independent);
  }
  if (name == "tpe-multivariate") {  // joint for several objectives too: multivariate=True
    TpeOptions joint;
    joint.multivariate_several = true;
    return std::make_unique<TpeSampler>(seed, joint);
  }
  if (name == "nsga2") return std::make_unique<Nsga2Sampler>(seed);
  if (name.rfind("nsga2:", 0) == 0) {  // nsga2:N, a population of N
    const std::string n = name.substr(6);
    char* end = nullptr;
    errno = 0;
    const long long size = n.empty() ? 0 : std::strtoll(n.c_str(), &end, 10);
    MASE_CHECK(!n.empty() && *end == '\0' && errno == 0 && size >= 2, ConfigError,
               "[sampler] nsga2:N expected a population N >= 2, got '", n, "'");
    Nsga2Options options;
    options.population_size = size;
    return std::make_unique<Nsga2Sampler>(seed, options);
  }
  throw ConfigError(cat("[sampler] expected random, grid, tpe, tpe-independent, tpe-multivariate, "
                        "nsga2 or nsga2:N, got '", name, "'"));
}

}  // namespace mase::search
