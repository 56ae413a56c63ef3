// tests/search/test_nsga2.cpp — NSGA-II (search/nsga2.h). Oracles: Optuna 5.0 itself on 300
// random populations — its non-domination fronts, crowding distances and elite selection, ties
// and infinities included (tests/fixtures/search/nsga2.json, made by make_nsga2_fixture.py);
// hand-worked populations; and the sampler's rules one at a time (generations, parents drawn
// from the elite, generation 0 at random, names).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/error.h"
#include "search/nsga2.h"

using namespace mase;
using namespace mase::search;
using nlohmann::json;

namespace test_nsga2 {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double number_of(const json& v) {  // the fixture writes ±inf as strings
  if (v.is_string()) return v.get<std::string>() == "inf" ? kInf : -kInf;
  return v.get<double>();
}

std::vector<Direction> directions_of(const json& c) {
  std::vector<Direction> d;
  for (const auto& s : c["directions"])
    d.push_back(s == "maximize" ? Direction::maximize : Direction::minimize);
  return d;
}

// A complete trial of generation g with objective values v.
Trial trial(int64_t number, std::vector<double> v, int64_t g, double x = 0.5) {
  Trial t;
  t.number = number;
  t.state = TrialState::complete;
  t.objectives = std::move(v);
  t.value = t.objectives[0];
  t.generation = g;
  t.values["x"] = x;
  return t;
}

}  // namespace

TEST_CASE("nsga2: dominance, fronts and crowding by hand") {
  const std::vector<Direction> max_min = {Direction::maximize, Direction::minimize};
  // (accuracy up, bits down)
  CHECK(nsga2::dominates({0.9, 4}, {0.8, 8}, max_min));
  CHECK(nsga2::dominates({0.9, 4}, {0.9, 8}, max_min));       // equal in one, better in one
  CHECK_FALSE(nsga2::dominates({0.9, 4}, {0.9, 4}, max_min));  // equal: neither
  CHECK_FALSE(nsga2::dominates({0.9, 8}, {0.8, 4}, max_min));  // a trade-off: neither
  //   0: (0.9, 8)  1: (0.8, 4)  2: (0.82, 8)  3: (0.85, 4)  4: (0.6, 16)
  // front 0: 0 and 3 (1 is dominated by 3; 2 by 0 and 3); front 1: 1 and 2 (a trade-off);
  // front 2: 4 (dominated by 1 and 2)
  const std::vector<nsga2::Point> p = {{0.9, 8}, {0.8, 4}, {0.82, 8}, {0.85, 4}, {0.6, 16}};
  const auto f = nsga2::fronts(p, max_min);
  REQUIRE(f.size() == 3);
  CHECK(f[0] == std::vector<size_t>{0, 3});
  CHECK(f[1] == std::vector<size_t>{1, 2});
  CHECK(f[2] == std::vector<size_t>{4});
  // only as many fronts as hold `enough` points: 1 is the Pareto front alone, 3 the first two
  CHECK(nsga2::fronts(p, max_min, 1) == std::vector<std::vector<size_t>>{{0, 3}});
  CHECK(nsga2::fronts(p, max_min, 3).size() == 2);
  // Crowding of front {0, 1, 3, 4} read as one front: by accuracy the order is 4 (0.6), 1
  // (0.8), 3 (0.85), 0 (0.9), range 0.3; by bits 1, 3 (4), 0 (8), 4 (16), range 12.
  //   4: end of accuracy (inf)             1: (0.85 − 0.6)/0.3 + end of bits (inf)
  //   3: (0.9 − 0.8)/0.3 + (8 − 4)/12      0: end of accuracy (inf)
  const auto d = nsga2::crowding_distances(p, {0, 1, 3, 4});
  CHECK(d[0] == kInf);
  CHECK(d[1] == kInf);
  CHECK(d[2] == doctest::Approx(0.1 / 0.3 + 4.0 / 12));
  CHECK(d[3] == kInf);
  // Elite of 3: front 0 (2 trials) fits, front 1 does not: its crowding picks one of 1, 2
  // (both at an end of every objective of that front: inf; Optuna's order keeps the later)
  const auto e = nsga2::elite(p, max_min, 3);
  REQUIRE(e.size() == 3);
  CHECK(std::set<size_t>(e.begin(), e.begin() + 2) == std::set<size_t>{0, 3});
  CHECK(e[2] == 2);
  // Hypervolume against (accuracy 0.5, 32 bits), by hand: the front 0 (0.9, 8), 3 (0.85, 4)
  // and 1, 2, 4 inside it dominate the staircase (0.85 − 0.5)·(32 − 4) + (0.9 − 0.85)·(32 − 8)
  CHECK(nsga2::hypervolume(p, max_min, {0.5, 32}) == doctest::Approx(0.35 * 28 + 0.05 * 24));
  CHECK(nsga2::hypervolume(p, max_min, {0.95, 32}) == 0);  // nothing beats 0.95
  CHECK_THROWS_AS(nsga2::hypervolume(p, {Direction::maximize}, {0.5}), ConfigError);
}

TEST_CASE("nsga2: fronts, crowding, elite and hypervolume agree with Optuna 5.0 (300 populations)") {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/nsga2.json");
  REQUIRE(in.good());
  const json fixture = json::parse(in);
  int cases = 0, hv_cases = 0;
  for (const json& c : fixture["cases"]) {
    const std::vector<Direction> dirs = directions_of(c);
    // points in the order Optuna was given them ("order": trial numbers)
    std::vector<nsga2::Point> by_number;
    for (const auto& v : c["values"]) {
      nsga2::Point p;
      for (const auto& x : v) p.push_back(number_of(x));
      by_number.push_back(p);
    }
    std::vector<int64_t> order = c["order"].get<std::vector<int64_t>>();
    std::vector<nsga2::Point> points;
    for (int64_t n : order) points.push_back(by_number[static_cast<size_t>(n)]);
    auto numbers = [&](const std::vector<size_t>& idx) {
      std::vector<int64_t> out;
      for (size_t i : idx) out.push_back(order[i]);
      return out;
    };
    CAPTURE(cases);
    const auto fronts = nsga2::fronts(points, dirs);
    REQUIRE(fronts.size() == c["ranks"].size());
    for (size_t r = 0; r < fronts.size(); ++r) {
      CHECK(numbers(fronts[r]) == c["ranks"][r].get<std::vector<int64_t>>());
      const auto d = nsga2::crowding_distances(points, fronts[r]);
      for (size_t k = 0; k < fronts[r].size(); ++k) {
        const json& want = c["crowding"][r][k];
        CHECK(want[0].get<int64_t>() == order[fronts[r][k]]);
        const double w = number_of(want[1]);
        if (std::isinf(w)) CHECK(d[k] == w);
        else CHECK(d[k] == doctest::Approx(w).epsilon(1e-12));
      }
    }
    const auto e = nsga2::elite(points, dirs, c["population_size"].get<size_t>());
    CHECK(numbers(e) == c["elite"].get<std::vector<int64_t>>());
    if (!c["hv"].is_null()) {
      const nsga2::Point ref = c["hv"]["reference"].get<nsga2::Point>();
      CHECK(nsga2::hypervolume(points, dirs, ref) ==
            doctest::Approx(c["hv"]["volume"].get<double>()).epsilon(1e-12));
      ++hv_cases;
    }
    ++cases;
  }
  CHECK(cases == 300);
  CHECK(hv_cases == 86);  // the cases of two objectives, all finite
}

TEST_CASE("nsga2: generations of population_size complete trials, as Optuna counts them") {
  Nsga2Options o;
  o.population_size = 3;
  Nsga2Sampler s(1, o);
  s.set_directions({Direction::maximize, Direction::minimize});
  std::vector<Trial> h;
  CHECK(s.next_generation(h) == 0);
  h.push_back(trial(0, {0.5, 8}, 0));
  h.push_back(trial(1, {0.6, 8}, 0));
  CHECK(s.next_generation(h) == 0);
  Trial failed = trial(2, {0, 0}, 0);
  failed.state = TrialState::failed;  // failed and running trials do not fill a generation
  h.push_back(failed);
  Trial running = trial(3, {0, 0}, 0);
  running.state = TrialState::running;
  h.push_back(running);
  CHECK(s.next_generation(h) == 0);
  h.push_back(trial(4, {0.7, 16}, 0));
  CHECK(s.next_generation(h) == 1);  // generation 0 has its 3
  h.push_back(trial(5, {0.9, 4}, 1));
  CHECK(s.next_generation(h) == 1);
  // the trial attribute Optuna reads (NSGAIISampler:generation, a JSON integer)
  const auto attrs = s.trial_attrs(h, 6);
  REQUIRE(attrs.size() == 1);
  CHECK(attrs[0].first == "NSGAIISampler:generation");
  CHECK(attrs[0].second == "1");
}

TEST_CASE("nsga2: parents are the elite of the previous generation and its parents") {
  Nsga2Options o;
  o.population_size = 2;
  Nsga2Sampler s(1, o);
  s.set_directions({Direction::maximize, Direction::minimize});
  std::vector<Trial> h = {trial(0, {0.5, 8}, 0), trial(1, {0.8, 4}, 0),  // 1 dominates 0
                          trial(2, {0.9, 4}, 1), trial(3, {0.4, 32}, 1)};
  CHECK(s.parents(h, 0).empty());
  // generation 1's parents: the elite of generation 0 = both (fronts {1}, {0})
  CHECK(s.parents(h, 1) == std::vector<size_t>{0, 1});  // in trial order
  // generation 2's: elite of {2, 3} ∪ {1, 0}: front 0 is {2} alone, front 1 {1}: 2 then 1
  CHECK(s.parents(h, 2) == std::vector<size_t>{1, 2});
}

TEST_CASE("nsga2: children come from the parents; generation 0 is random; reproducible") {
  Space space;
  space.categorical("a", {"p", "q", "r", "s", "t", "u", "v", "w"});
  space.categorical("b", {"p", "q", "r", "s", "t", "u", "v", "w"});
  space.real("x", 0, 1);
  Nsga2Options o;
  o.population_size = 2;
  Nsga2Sampler s(7, o);
  s.set_directions({Direction::maximize, Direction::minimize});
  // generation 0: exactly the random sampler's draws for the same trial number
  std::vector<Trial> h;
  CHECK(*s.sample(space, h, 0) == *RandomSampler(7).sample(space, h, 0));
  // two parents with distinctive values; every child parameter is a parent's unless mutated
  // (probability 1/3 per parameter), so over many children most values are the parents'
  Trial p0 = trial(0, {0.9, 8}, 0), p1 = trial(1, {0.8, 4}, 0);
  p0.values = {{"a", 0}, {"b", 0}, {"x", 0.125}};
  p1.values = {{"a", 1}, {"b", 1}, {"x", 0.875}};
  h = {p0, p1};
  int from_parents = 0, total = 0, mixed = 0;
  for (int64_t n = 2; n < 402; ++n) {
    const Values v = *s.sample(space, h, n);
    CHECK(v == *s.sample(space, h, n));  // a pure function of (seed, history, number)
    int own = 0;
    for (const auto& [name, x] : v) {
      const bool parent = x == p0.values.at(name) || x == p1.values.at(name);
      from_parents += parent;
      own += parent;
      ++total;
    }
    mixed += own == 3 && v.at("a") != v.at("b");  // a crossover took a from one, b from the other
  }
  // kept with probability 2/3 per parameter, and a fresh draw may land on a parent's value too
  CHECK(from_parents > total * 0.6);
  CHECK(from_parents < total * 0.8);
  CHECK(mixed > 20);
}

TEST_CASE("nsga2: names, make_sampler and refusals") {
  CHECK(make_sampler("nsga2", 0)->name() == "nsga2");
  CHECK(make_sampler("nsga2:8", 0)->name() == "nsga2:8");
  CHECK(make_sampler("nsga2:50", 0)->name() == "nsga2");  // Optuna's default, spelled as such
  CHECK_THROWS_WITH_AS(make_sampler("nsga2:1", 0), doctest::Contains("population N >= 2"),
                       ConfigError);
  CHECK_THROWS_AS(make_sampler("nsga2:", 0), ConfigError);
  CHECK_THROWS_AS(make_sampler("nsga2:8x", 0), ConfigError);
  // every sampler make_sampler builds takes two objectives (tpe: MOTPE, search/tpe_multi.cpp);
  // one that ranks a single value refuses them, naming those
  const std::vector<Direction> two = {Direction::maximize, Direction::minimize};
  for (const char* name : {"random", "grid", "nsga2", "tpe", "tpe-independent"}) {
    INFO(name);
    CHECK_NOTHROW(make_sampler(name, 0)->set_directions(two));
    CHECK_NOTHROW(make_sampler(name, 0)->set_directions({Direction::minimize}));
  }
  struct OneValue : Sampler {
    std::string name() const override { return "one-value"; }
    std::optional<Values> sample(const Space&, const std::vector<Trial>&, int64_t) override {
      return std::nullopt;
    }
  };
  CHECK_THROWS_WITH_AS(OneValue().set_directions(two),
                       "[sampler] one-value ranks one objective, got 2 (for several objectives "
                       "use tpe, tpe-independent, tpe-multivariate, nsga2, random or grid)",
                       ConfigError);
}

TEST_CASE("nsga2: a parameter of one value does not dilute the mutation rate (as Optuna's)") {
  // Optuna's relative search space leaves out single-valued distributions, so a child's
  // mutation probability is 1/(number of the others): with c fixed and x free, 1/1 — every
  // child's x is a fresh draw, never a parent's (1/2 would keep a parent's x half the time).
  Space space;
  space.categorical("c", {"only"});
  space.real("x", 0, 1);
  Nsga2Options o;
  o.population_size = 2;
  Nsga2Sampler s(3, o);
  s.set_directions({Direction::maximize, Direction::minimize});
  Trial p0 = trial(0, {0.9, 8}, 0, 0.125), p1 = trial(1, {0.8, 4}, 0, 0.875);
  p0.values["c"] = 0;
  p1.values["c"] = 0;
  const std::vector<Trial> h = {p0, p1};
  int kept = 0;
  for (int64_t n = 2; n < 202; ++n) {
    const Values v = *s.sample(space, h, n);
    CHECK(v.at("c") == 0);
    kept += v.at("x") == 0.125 || v.at("x") == 0.875;
  }
  CHECK(kept == 0);
}

TEST_CASE("nsga2: hypervolume names what is not two objectives: directions, reference, a point") {
  const std::vector<Direction> max_min = {Direction::maximize, Direction::minimize};
  CHECK_THROWS_WITH_AS(nsga2::hypervolume({{0.9, 8}}, {Direction::maximize}, {0.5}),
                       "[nsga2] hypervolume expected two objectives, got 1", ConfigError);
  CHECK_THROWS_WITH_AS(nsga2::hypervolume({{0.9, 8}}, max_min, {0.5}),
                       "[nsga2] hypervolume expected a reference point of 2 values, got 1",
                       ConfigError);
  // a point of one value was read past its end
  CHECK_THROWS_WITH_AS(nsga2::hypervolume({{0.9, 8}, {0.8}}, max_min, {0.5, 32}),
                       "[nsga2] hypervolume expected points of 2 values, got one of 1",
                       ConfigError);
}

TEST_CASE("nsga2: a NaN value is refused, not ranked (with NaNs dominance can go round a cycle)") {
  // a dominates b (objective 1), b dominates c (objective 0), c dominates a (objective 2): no
  // point is undominated, and the peeling would never end
  const std::vector<Direction> mins(3, Direction::minimize);
  const std::vector<nsga2::Point> p = {{NAN, 1, 5}, {0, 2, NAN}, {1, NAN, 3}};
  REQUIRE(nsga2::dominates(p[0], p[1], mins));
  REQUIRE(nsga2::dominates(p[1], p[2], mins));
  REQUIRE(nsga2::dominates(p[2], p[0], mins));
  CHECK_THROWS_WITH_AS(nsga2::fronts(p, mins),
                       "[nsga2] fronts expected values that are not NaN, got one in point 0",
                       ConfigError);
  CHECK_THROWS_AS(nsga2::elite(p, mins, 2), ConfigError);
}

}  // namespace test_nsga2
