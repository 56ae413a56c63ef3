// tests/search/test_space_sampler.cpp — search spaces, the random and the grid sampler.
// Oracles: hand arithmetic (grid sizes, mixed-radix points, uniform draws at chosen u),
// exhaustive enumeration (every grid point exactly once), counting (random frequencies).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "runtime/error.h"
#include "search/sampler.h"
#include "search/space.h"

using namespace mase::search;

namespace {
Space lab2_like() {
  Space s;
  s.integer("num_layers", 2, 8, 2)                      // 2, 4, 6, 8
      .categorical("hidden_size", {"128", "256", "512"})
      .real("lr", 1e-5, 1e-3, /*log=*/true);
  return s;
}
Trial done(int64_t n, Values v, double value = 0, TrialState s = TrialState::complete) {
  Trial t;
  t.number = n;
  t.state = s;
  t.values = std::move(v);
  t.value = value;
  return t;
}
}  // namespace

TEST_CASE("space: parameters sorted by name, sizes and text forms by hand") {
  Space s = lab2_like();
  REQUIRE(s.params().size() == 3);
  CHECK(s.params()[0].name == "hidden_size");  // sorted, not declaration order
  CHECK(s.params()[1].name == "lr");
  CHECK(s.params()[2].name == "num_layers");
  CHECK(s.at("num_layers").cardinality() == 4);  // (8 - 2) / 2 + 1
  CHECK(s.at("lr").cardinality() == 0);          // continuous
  CHECK(s.grid_size() == 0);                     // a continuous parameter: no grid

  Space g;
  g.integer("x", 0, 10, 3);                 // 0, 3, 6, 9: high snaps down to the step grid
  CHECK(g.at("x").high == 9);
  CHECK(g.at("x").cardinality() == 4);
  g.categorical("c", {"a", "b", "c"});
  CHECK(g.grid_size() == 12);               // 4 * 3

  // Text forms: the choice, the integer, the real exactly (%.17g), and back.
  const Param& lr = s.at("lr");
  double v = 0.000123456789012345678;
  CHECK(lr.parse(lr.format(v)) == v);
  CHECK(s.at("hidden_size").format(2) == "512");
  CHECK(s.at("hidden_size").parse("256") == 1);
  CHECK(s.at("num_layers").format(6) == "6");
  CHECK(s.format({{"hidden_size", 0}, {"num_layers", 4}}) == "hidden_size=128 num_layers=4");

  CHECK(s.at("num_layers").contains(4));
  CHECK_FALSE(s.at("num_layers").contains(5));  // off the step grid
  CHECK_FALSE(s.at("num_layers").contains(10));
  CHECK_FALSE(lr.contains(2e-3));
}

TEST_CASE("space: bad declarations and bad reads are ConfigErrors with the name") {
  Space s;
  s.real("lr", 1e-4, 1e-2);
  CHECK_THROWS_WITH_AS(s.real("lr", 0, 1), doctest::Contains("'lr' declared twice"),
                       mase::ConfigError);
  CHECK_THROWS_AS(s.categorical("c", {}), mase::ConfigError);
  CHECK_THROWS_AS(s.categorical("c", {"a", "a"}), mase::ConfigError);
  CHECK_THROWS_AS(s.integer("n", 5, 2), mase::ConfigError);
  CHECK_THROWS_AS(s.integer("n", 1, 5, 0), mase::ConfigError);
  CHECK_THROWS_AS(s.integer("n", 0, 5, 1, /*log=*/true), mase::ConfigError);
  // bounds a double holds exactly (a Param keeps them as doubles; high - low cannot overflow)
  CHECK_THROWS_WITH_AS(s.integer("n", INT64_MIN, INT64_MAX), doctest::Contains("within ±2^53"),
                       mase::ConfigError);
  CHECK_NOTHROW(Space().integer("n", -(int64_t{1} << 53), int64_t{1} << 53));
  CHECK_THROWS_AS(s.real("w", 0, 1, /*log=*/true), mase::ConfigError);
  CHECK_THROWS_AS(s.real("w", 1, NAN), mase::ConfigError);
  CHECK_THROWS_WITH_AS(s.at("nope"), doctest::Contains("the space has: lr"), mase::ConfigError);
  CHECK_THROWS_AS(s.at("lr").parse("0.5"), mase::ConfigError);   // outside [1e-4, 1e-2]
  CHECK_THROWS_AS(s.at("lr").parse("abc"), mase::ConfigError);

  Params p(s, {{"lr", 1e-3}});
  CHECK(p.real("lr") == 1e-3);
  CHECK_THROWS_WITH_AS(p.integer("lr"), doctest::Contains("is real, read as integer"),
                       mase::ConfigError);
}

TEST_CASE("space: names and choices that are not UTF-8 are refused (a study stores them as JSON)") {
  // found by fuzz/targets.h's space_spec: --space 'w=cat:19\xe3|2' parsed, and the study's
  // space_to_json(...).dump() then threw nlohmann's type_error 316 ("unexpected error")
  CHECK_THROWS_WITH_AS(Space().categorical("w", {"128", "19\xe3", "256"}),
                       "[space] expected parameter 'w' choices in UTF-8 (a study stores it as "
                       "JSON), got the byte 0xe3 at offset 2 of '19\uFFFD'",
                       mase::ConfigError);
  CHECK_THROWS_WITH_AS(Space().real("l\xffr", 0, 1),
                       doctest::Contains("expected a parameter name in UTF-8"), mase::ConfigError);
  CHECK_THROWS_AS(Space().integer("\xc0\x80", 0, 1), mase::ConfigError);  // overlong NUL
  CHECK_THROWS_AS(Space().categorical("\xed\xa0\x80", {"a"}), mase::ConfigError);  // a surrogate
  CHECK_NOTHROW(Space().categorical("\xce\xbb", {"\xc3\xa9t\xc3\xa9", "\xe2\x82\xac"}));  // λ: été, €
}

TEST_CASE("space: a grid of more points than int64 counts is refused and does not overflow") {
  // found by fuzz/targets.h's space_spec: grid_size multiplied the cardinalities in int64 (UBSan:
  // signed overflow); 2^32 x 2^31 points wrapped to INT64_MIN, which passed the grid sampler's
  // check and reached std::vector's constructor (std::length_error, not a ConfigError)
  Space s;
  s.integer("a", 0, (int64_t{1} << 32) - 1).integer("b", 0, (int64_t{1} << 31) - 1);
  CHECK(s.grid_size() == INT64_MAX);
  CHECK_THROWS_WITH_AS(GridSampler(0).sample(s, {}, 0),
                       doctest::Contains("expected at most 1048576 grid points, got more than 2^63"),
                       mase::ConfigError);
  s.real("x", 0, 1);  // continuous: no grid, whatever the others
  CHECK(s.grid_size() == 0);
  Space t;
  t.integer("a", 0, (int64_t{1} << 31) - 1).integer("b", 0, (int64_t{1} << 31) - 1);
  CHECK(t.grid_size() == int64_t{1} << 62);  // the largest products are still exact
}

TEST_CASE("sampler: uniform draws by hand at chosen u") {
  Space s = lab2_like();
  const Param& hs = s.at("hidden_size");
  CHECK(draw_uniform(hs, 0.0) == 0);
  CHECK(draw_uniform(hs, 0.5) == 1);        // floor(0.5 * 3)
  CHECK(draw_uniform(hs, 0.999999) == 2);
  const Param& nl = s.at("num_layers");
  CHECK(draw_uniform(nl, 0.0) == 2);
  CHECK(draw_uniform(nl, 0.6) == 6);        // 2 + 2 * floor(0.6 * 4)
  CHECK(draw_uniform(nl, 0.999999) == 8);
  // Log-uniform on [1e-5, 1e-3]: u = 1/2 is the geometric mean 1e-4.
  CHECK(draw_uniform(s.at("lr"), 0.5) == doctest::Approx(1e-4).epsilon(1e-12));
  // Log integer on [1, 100]: log-uniform on [0.5, 100.5]; u = 1/2 -> sqrt(0.5 * 100.5) = 7.09 -> 7.
  Space t;
  t.integer("heads", 1, 100, 1, /*log=*/true);
  CHECK(draw_uniform(t.at("heads"), 0.5) == 7);
  CHECK(draw_uniform(t.at("heads"), 0.0) == 1);
}

TEST_CASE("sampler: unit_uniform is uniform below 1 and a pure function of its arguments") {
  double sum = 0, lo = 1, hi = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double u = unit_uniform(7, 3, static_cast<uint64_t>(i));
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));  // sd of the mean: 0.29 / sqrt(n) = 0.001
  CHECK(unit_uniform(7, 3, 11) == unit_uniform(7, 3, 11));
  CHECK(unit_uniform(7, 3, 11) != unit_uniform(7, 4, 11));  // another stream
  CHECK(unit_uniform(7, 3, 11) != unit_uniform(8, 3, 11));  // another seed
}

TEST_CASE("random sampler: reproducible per (seed, trial), in range, every choice equally often") {
  Space s = lab2_like();
  RandomSampler a(0), b(0), c(1);
  auto v5 = a.sample(s, {}, 5).value();
  CHECK(v5 == b.sample(s, {done(0, {})}, 5).value());  // history does not matter
  CHECK(v5 != a.sample(s, {}, 6).value());
  CHECK(v5 != c.sample(s, {}, 5).value());

  std::map<double, int> counts;
  const int n = 4000;
  for (int64_t t = 0; t < n; ++t) {
    Values v = a.sample(s, {}, t).value();
    CHECK(s.at("lr").contains(v["lr"]));
    CHECK(s.at("num_layers").contains(v["num_layers"]));
    counts[v["num_layers"]]++;
  }
  REQUIRE(counts.size() == 4);
  for (auto& [value, k] : counts) CHECK(std::abs(k - n / 4) < 120);  // sd sqrt(4000 * 3/16) = 27
}

TEST_CASE("grid sampler: every point exactly once in a seeded order, then exhausted") {
  Space s;
  s.categorical("a", {"x", "y"}).integer("b", 0, 2);  // 2 * 3 = 6 points
  // Mixed radix, "a" most significant: index 4 = (a 1, b 1).
  CHECK(grid_point(s, 4) == Values{{"a", 1}, {"b", 1}});
  CHECK(grid_point(s, 2) == Values{{"a", 0}, {"b", 2}});

  auto run = [&](uint64_t seed) {
    GridSampler g(seed);
    std::vector<Trial> history;
    std::vector<Values> order;
    for (int64_t n = 0; n < 6; ++n) {
      auto v = g.sample(s, history, n);
      REQUIRE(v.has_value());
      order.push_back(*v);
      history.push_back(done(n, *v));
    }
    CHECK_FALSE(g.sample(s, history, 6).has_value());
    return order;
  };
  auto o0 = run(0), o1 = run(1);
  std::set<Values> all(o0.begin(), o0.end());
  CHECK(all.size() == 6);                         // no point twice
  CHECK(std::set<Values>(o1.begin(), o1.end()) == all);
  CHECK(o0 != o1);                                // the seed changes the order, not the set

  // A running trial's point is taken; a failed trial's point is handed out again, but only
  // after every point never tried (a killed worker's point must come back: none is lost).
  GridSampler g(0);
  Values first = g.sample(s, {}, 0).value();
  CHECK(g.sample(s, {done(0, first, 0, TrialState::running)}, 1).value() != first);
  std::vector<Trial> history = {done(0, first, 0, TrialState::failed)};
  CHECK(g.sample(s, history, 1).value() != first);  // a point that fails does not starve the rest
  for (int i = 1; i < 6; ++i) {
    const Values v = g.sample(s, history, i).value();
    CHECK(v != first);
    history.push_back(done(i, v, 1, TrialState::complete));
  }
  CHECK(g.sample(s, history, 6).value() == first);  // the rest done: the failed point again
  for (int k = 1; k <= 3; ++k) history.push_back(done(5 + k, first, 0, TrialState::failed));
  CHECK(g.sample(s, history, 9).value() == first);  // however often it failed
  history.push_back(done(9, first, 1, TrialState::complete));
  CHECK_FALSE(g.sample(s, history, 10).has_value());
}

TEST_CASE("grid sampler and make_sampler: bad input") {
  Space s;
  s.real("lr", 1e-4, 1e-2);
  GridSampler g(0);
  CHECK_THROWS_WITH_AS(g.sample(s, {}, 0), doctest::Contains("'lr' is continuous"),
                       mase::ConfigError);
  CHECK_THROWS_AS(make_sampler("bayes", 0), mase::ConfigError);
  CHECK(make_sampler("grid", 0)->name() == "grid");
  CHECK(make_sampler("random", 0)->name() == "random");
  CHECK(trial_state_from("pruned") == TrialState::pruned);
  CHECK_THROWS_AS(trial_state_from("done"), mase::ConfigError);
}
