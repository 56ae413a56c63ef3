// tests/search/test_tpe_multi.cpp — TPE of several objectives (search/tpe_multi.cpp) and the
// hypervolume functions it uses (search/hypervolume.h). Oracles: Optuna 5.0 itself
// (tests/fixtures/search/motpe.json, made by make_motpe_fixture.py) — _split_trials on 243
// random studies of 2–4 objectives with ties, duplicates, ±inf, pruned and running trials, the
// Parzen weights of 3 large ones; _solve_hssp on 300 point sets; compute_hypervolume on 200;
// hand-worked cases; and the sampler end to end: on ZDT1 its front beats random's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/check_close.h"
#include "search/hypervolume.h"
#include "search/nsga2.h"
#include "search/study.h"
#include "search/study_test_util.h"
#include "search/tpe.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using nlohmann::json;

namespace test_tpe_multi {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const json& fixture() {
  static const json fx = [] {
    std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/motpe.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return fx;
}

double number_of(const json& v) {  // the fixture writes ±inf as strings
  if (v.is_string()) return v.get<std::string>() == "inf" ? kInf : -kInf;
  return v.get<double>();
}

std::vector<double> numbers_of(const json& a) {
  std::vector<double> out;
  for (const json& v : a) out.push_back(number_of(v));
  return out;
}

// Item n of "trials" is trial n: its values (complete), or "pruned" / "running".
std::vector<Trial> history_of(const json& c) {
  std::vector<Trial> h;
  for (const json& t : c["trials"]) {
    Trial tr;
    tr.number = static_cast<int64_t>(h.size());
    tr.values["x"] = 0.5;
    if (t.is_string()) {
      tr.state = t == "pruned" ? TrialState::pruned : TrialState::running;
    } else {
      tr.state = TrialState::complete;
      tr.objectives = numbers_of(t);
      tr.value = tr.objectives[0];
    }
    h.push_back(tr);
  }
  return h;
}

hv::Losses point_of(const std::vector<hv::Losses>& points, const json& labels, size_t label) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i].get<size_t>() == label) return points[i];
  FAIL("no point labelled " << label);
  return {};
}

std::vector<int64_t> numbers(const std::vector<const Trial*>& group) {
  std::vector<int64_t> out;
  for (const Trial* t : group) out.push_back(t->number);
  return out;
}

// ZDT1 (Zitzler, Deb, Thiele 2000) on 5 parameters in [0, 1], both objectives minimized; the
// true front is x2..x5 = 0: f2 = 1 - sqrt(f1).
std::vector<double> zdt1(const Values& v) {
  double sum = 0;
  for (const char* n : {"x2", "x3", "x4", "x5"}) sum += v.at(n);
  const double f1 = v.at("x1"), g = 1 + 9.0 / 4.0 * sum;
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

// The hypervolume of the front after `n` trials of `sampler` on ZDT1, against (1.1, 5): at
// most 1.1 x 5 - 1/3 = 5.17 (the area above the true front). The usual (1.1, 1.1) would leave
// random's fronts at 0 on most seeds (its g averages 5.5), and the check unable to tell a TPE
// that learned little from one that learned much.
double zdt1_hypervolume(const std::string& sampler, uint64_t seed, int n) {
  Space space;
  for (const char* p : {"x1", "x2", "x3", "x4", "x5"}) space.real(p, 0, 1);
  const std::vector<Direction> both = {Direction::minimize, Direction::minimize};
  auto s = make_sampler(sampler, seed);
  s->set_directions(both);
  std::vector<Trial> history;
  std::vector<nsga2::Point> points;
  for (int i = 0; i < n; ++i) {
    Trial t;
    t.number = i;
    t.values = *s->sample(space, history, i);
    t.state = TrialState::complete;
    t.objectives = zdt1(t.values);
    t.value = -t.objectives[0];  // what Study::ask shows a sampler: objective 0, negated
    history.push_back(t);
    points.push_back(t.objectives);
  }
  return nsga2::hypervolume(points, both, {1.1, 5});
}

}  // namespace

TEST_CASE("tpe_gamma_multi: ceil(n / 10), uncapped") {
  CHECK(tpe_gamma_multi(0) == 0);
  CHECK(tpe_gamma_multi(1) == 1);
  CHECK(tpe_gamma_multi(10) == 1);
  CHECK(tpe_gamma_multi(11) == 2);
  CHECK(tpe_gamma_multi(241) == 25);
  CHECK(tpe_gamma_multi(300) == 30);
}

TEST_CASE("hv::compute: Optuna's compute_hypervolume, 2 to 5 objectives (fixture)") {
  int n = 0;
  for (const json& c : fixture()["hypervolume"]) {
    std::vector<hv::Losses> points;
    for (const json& p : c["points"]) points.push_back(numbers_of(p));
    const double want = c["hv"].get<double>();
    INFO(c.dump());
    CHECK(hv::compute(points, numbers_of(c["reference"])) ==
          doctest::Approx(want).epsilon(1e-12).scale(1.0));
    ++n;
  }
  CHECK(n == 200);
}

TEST_CASE("hv::compute: by hand, and its refusals") {
  // two boxes of 2 x 1 and 1 x 2 overlapping in 1 x 1: 3
  CHECK(hv::compute({{0, 1}, {1, 0}}, {2, 2}) == 3);
  // 3 objectives: boxes of 1 x 0.5 x 0.5 and 0.5 x 1 x 1 sharing 0.5 x 0.5 x 0.5
  CHECK(hv::compute({{0, 0, 0}}, {1, 1, 1}) == 1);
  CHECK(hv::compute({{0, 0.5, 0.5}, {0.5, 0, 0}}, {1, 1, 1}) == doctest::Approx(0.25 + 0.5 - 0.125));
  // 4 objectives (WFG): point i is 0 in objective i, 0.5 elsewhere — a box of 0.5^3 each, any
  // two or more sharing 0.5^4: 4 (1/8) - 6 (1/16) + 4 (1/16) - 1/16 = 5/16
  std::vector<hv::Losses> four(4, hv::Losses(4, 0.5));
  for (size_t i = 0; i < 4; ++i) four[i][i] = 0;
  CHECK(hv::compute(four, {1, 1, 1, 1}) == doctest::Approx(5.0 / 16));
  // a point, its duplicate and a point it dominates: the one box
  CHECK(hv::compute({{0, 0, 0, 0}, {0, 0, 0, 0}, {0.5, 0.5, 0.5, 0.5}}, {1, 1, 1, 1}) == 1);
  CHECK(hv::compute({}, {1, 1}) == 0);
  CHECK(hv::compute({{0, 0}}, {kInf, 1}) == kInf);
  CHECK_THROWS_WITH_AS(hv::compute({{0, 2}}, {1, 1}),
                       "[hypervolume] expected every point at or below the reference point, got "
                       "point 0 with 2 > 1 in objective 1",
                       ConfigError);
  CHECK_THROWS_AS(hv::compute({{0, 0, 0}}, {1, 1}), ConfigError);
}

TEST_CASE("hv::hssp: Optuna's _solve_hssp, 2 to 4 objectives (fixture)") {
  int n = 0, cut = 0, ties = 0;
  for (const json& c : fixture()["hssp"]) {
    std::vector<hv::Losses> points;
    for (const json& p : c["points"]) points.push_back(numbers_of(p));
    const hv::Losses ref = hv::reference_point(points);
    INFO(c.dump());
    CHECK(ref == numbers_of(c["reference"]));  // bit for bit: the same two multiplications
    const auto chosen = hv::hssp(points, c["labels"].get<std::vector<size_t>>(),
                                 c["subset_size"].get<size_t>(), ref);
    const auto want = c["chosen"].get<std::vector<size_t>>();
    REQUIRE(chosen.size() == want.size());
    // The same, in the same order — up to an exact tie: where two points would add the same
    // volume to what is chosen (symmetric points, say), rounding decides, and Optuna's
    // rounding is numpy's and BLAS's. Then the two picks must add the same volume, and the
    // rest is not compared.
    const auto diverge = std::mismatch(chosen.begin(), chosen.end(), want.begin());
    if (diverge.first != chosen.end()) {
      const auto k = static_cast<size_t>(diverge.first - chosen.begin());
      std::vector<hv::Losses> before;
      for (size_t i = 0; i < k; ++i) before.push_back(point_of(points, c["labels"], chosen[i]));
      auto adds = [&](size_t label) {
        std::vector<hv::Losses> with = before;
        with.push_back(point_of(points, c["labels"], label));
        return hv::compute(with, ref) - hv::compute(before, ref);
      };
      CHECK(adds(chosen[k]) == doctest::Approx(adds(want[k])).epsilon(1e-12).scale(1.0));
      ++ties;
    }
    cut += chosen.size() < points.size();
    ++n;
  }
  CHECK(n == 300);
  CHECK(cut > 200);  // most cases choose a proper subset
  CHECK(ties <= 3);  // one, in a case with duplicated points on a grid
}

TEST_CASE("hv::hssp: by hand") {
  // 2-D front (0, 3), (1, 1), (3, 0), reference (4, 4): alone, (1, 1) dominates the most (9);
  // then (0, 3) adds 1 x 1 = 1 and (3, 0) adds 1 x 1 = 1: the first of equals
  const std::vector<hv::Losses> front = {{0, 3}, {1, 1}, {3, 0}};
  CHECK(hv::hssp(front, {10, 11, 12}, 1, {4, 4}) == std::vector<size_t>{11});
  CHECK(hv::hssp(front, {10, 11, 12}, 2, {4, 4}) == std::vector<size_t>{11, 10});
  // copies count once: two distinct points first, then the first copy in the order given
  CHECK(hv::hssp({{1, 1}, {1, 1}, {0, 2}}, {0, 1, 2}, 2, {3, 3}) == std::vector<size_t>{2, 0});
  CHECK(hv::hssp({{1, 1}, {1, 1}, {1, 1}}, {0, 1, 2}, 2, {3, 3}) == std::vector<size_t>{0, 1});
  // reference_point: 10% beyond the worst, whatever the sign; 1e-12 for 0
  CHECK(hv::reference_point({{-2, 0}, {-1, 5}}) == hv::Losses{-1 * 0.9, 5 * 1.1});
  CHECK(hv::reference_point({{0, 0}})[0] == 1e-12);
  CHECK_THROWS_AS(hv::hssp(front, {0, 1, 2}, 0, {4, 4}), ConfigError);
  CHECK_THROWS_AS(hv::hssp(front, {0, 1}, 1, {4, 4}), ConfigError);
}

TEST_CASE("tpe_split, several objectives: Optuna's _split_trials below and above (fixture)") {
  int n = 0, with_pruned = 0, with_running = 0;
  for (const json& c : fixture()["split"]) {
    std::vector<Direction> dirs;
    for (const json& d : c["directions"])
      dirs.push_back(d == "maximize" ? Direction::maximize : Direction::minimize);
    const std::vector<Trial> h = history_of(c);
    const TpeSplit split = tpe_split(h, /*constant_liar=*/true, dirs);
    INFO(c.dump());
    CHECK(tpe_gamma_multi(static_cast<int>(split.n_complete)) == c["n_below"].get<int>());
    CHECK(numbers(split.good) == c["below"].get<std::vector<int64_t>>());
    CHECK(numbers(split.bad) == c["above"].get<std::vector<int64_t>>());
    if (c.contains("weights_below")) {  // the Parzen estimators of x built from both groups
      Space space;
      space.real("x", 0, 1);
      const Param& x = space.params()[0];
      const std::vector<double> good(split.good.size(), 0.5), bad(split.bad.size(), 0.5);
      check_close(ParzenEstimator(x, good, 1.0, /*equal_weights=*/true).weights(),
                  c["weights_below"].get<std::vector<double>>(), 1e-14, "below");
      check_close(ParzenEstimator(x, bad, 1.0).weights(),
                  c["weights_above"].get<std::vector<double>>(), 1e-14, "above");
      CHECK(split.good.size() > 25);  // past the cap of one objective
    }
    for (const Trial& t : h) {
      with_pruned += t.state == TrialState::pruned;
      with_running += t.state == TrialState::running;
    }
    ++n;
  }
  CHECK(n == 243);
  CHECK(with_pruned > 100);
  CHECK(with_running > 100);
}

TEST_CASE("tpe_split, several objectives: by hand") {
  const std::vector<Direction> dirs = {Direction::maximize, Direction::minimize};
  auto complete = [](int64_t n, double a, double b) {
    Trial t;
    t.number = n;
    t.state = TrialState::complete;
    t.objectives = {a, b};
    return t;
  };
  // 20 trials: gamma 2. Front: 0 (1, 1), 1 (2, 2), 2 (3, 3) — reference (-0.9, 3.3): as
  // losses (-1, 1), (-2, 2), (-3, 3); HSSP keeps the two that dominate the most.
  std::vector<Trial> h = {complete(0, 1, 1), complete(1, 2, 2), complete(2, 3, 3)};
  for (int64_t n = 3; n < 20; ++n) h.push_back(complete(n, 0, 10 + static_cast<double>(n)));
  h.push_back(Trial{});  // running: bad, not counted
  h.back().number = 20;
  TpeSplit s = tpe_split(h, true, dirs);
  CHECK(s.n_complete == 20);
  REQUIRE(s.good.size() == 2);
  // contributions alone: (-1,1): 0.1*2.3 = 0.23; (-2,2): 1.1*1.3 = 1.43; (-3,3): 2.1*0.3 = 0.63;
  // then with (-2,2) chosen: (-1,1) adds 0.1*1 = 0.1, (-3,3) adds 1*0.3 = 0.3
  CHECK(numbers(s.good) == std::vector<int64_t>{1, 2});
  CHECK(s.bad.back()->number == 20);
  // without the liar the running trial is nowhere
  CHECK(tpe_split(h, false, dirs).bad.size() == 18);
  // a complete trial with a NaN (or a missing) value is left out, as with one objective
  h[5].objectives = {NAN, 1};
  h[6].objectives = {1};
  CHECK(tpe_split(h, true, dirs).n_complete == 18);
  CHECK_THROWS_AS(tpe_split(h, true, {Direction::maximize}), ConfigError);
}

TEST_CASE("tpe_split, several objectives: a long chain of ranks, one trial each") {
  // 5000 trials each dominating the one before: 5000 ranks of one trial, gamma 500, so the
  // good group is the chain's last 500. (Peeling a rank by comparing every pair left made this
  // O(n^3), about ten seconds; Optuna's one pass over the lexicographically sorted losses a rank
  // makes it O(n) a rank. No time is asserted here — speed belongs to benchmarks — but a
  // return of the cubic peel shows as this case's seconds in the ctest log.)
  const std::vector<Direction> dirs = {Direction::minimize, Direction::minimize, Direction::maximize};
  std::vector<Trial> h;
  for (int64_t n = 0; n < 5000; ++n) {
    Trial t;
    t.number = n;
    t.state = TrialState::complete;
    const double v = 5000.0 - static_cast<double>(n);
    t.objectives = {v, v, -v};
    h.push_back(t);
  }
  const TpeSplit s = tpe_split(h, true, dirs);
  REQUIRE(s.good.size() == 500);
  CHECK(s.good.front()->number == 4500);
  CHECK(s.good.back()->number == 4999);
}

TEST_CASE("make_sampler: tpe and tpe-independent take several objectives; the refusal names them") {
  const std::vector<Direction> three(3, Direction::minimize);
  CHECK_NOTHROW(make_sampler("tpe", 0)->set_directions(three));
  CHECK_NOTHROW(make_sampler("tpe-independent", 0)->set_directions(three));
  CHECK_THROWS_AS(make_sampler("tpe", 0)->set_directions({}), ConfigError);
  // with several objectives "tpe" is independent, as Optuna's TPESampler(): the same proposals
  Space space;
  space.real("a", 0, 1);
  space.real("b", 0, 1);
  std::vector<Trial> h;
  for (int64_t n = 0; n < 14; ++n) {
    Trial t;
    t.number = n;
    t.state = TrialState::complete;
    t.values = {{"a", 0.07 * static_cast<double>(n)}, {"b", 0.5}};
    t.objectives = {t.values["a"], 1 - t.values["a"], 0.3};
    h.push_back(t);
  }
  auto tpe = make_sampler("tpe", 3), ind = make_sampler("tpe-independent", 3);
  tpe->set_directions(three);
  ind->set_directions(three);
  CHECK(*tpe->sample(space, h, 14) == *ind->sample(space, h, 14));
  tpe->set_directions({Direction::minimize});  // one objective: multivariate, so not the same
  ind->set_directions({Direction::minimize});
  for (Trial& t : h) t.value = -t.objectives[0];
  CHECK(*tpe->sample(space, h, 14) != *ind->sample(space, h, 14));
}

TEST_CASE("tpe-multivariate: several objectives modelled jointly keep the good trials' pairs") {
  // The good trials lie near the diagonal a = b, anywhere along it: both objectives reward a
  // small |a − b| and pull a apart. Independent TPE sees a good marginal for a and one for b,
  // and pairs them at random; the joint model draws a whole good point, so its proposals stay
  // nearer the diagonal (the reason for multivariate TPE, Falkner et al. 2018).
  const std::vector<Direction> two(2, Direction::minimize);
  Space space;
  space.real("a", 0, 1);
  space.real("b", 0, 1);
  std::vector<Trial> h;
  for (int64_t n = 0; n < 100; ++n) {
    Trial t;
    t.number = n;
    t.state = TrialState::complete;
    t.values = *RandomSampler(5).sample(space, h, n);
    const double a = t.values["a"], off = std::abs(a - t.values["b"]);
    t.objectives = {off + 0.1 * a, off + 0.1 * (1 - a)};
    h.push_back(t);
  }
  const auto mean_off = [&](const std::string& name) {
    auto sampler = make_sampler(name, 9);
    sampler->set_directions(two);
    double sum = 0;
    for (int64_t n = 100; n < 300; ++n) {
      const Values v = *sampler->sample(space, h, n);
      sum += std::abs(v.at("a") - v.at("b"));
    }
    return sum / 200;
  };
  const double joint = mean_off("tpe-multivariate"), independent = mean_off("tpe");
  MESSAGE("mean |a - b| of 200 proposals: tpe-multivariate " << joint << ", tpe (independent) "
                                                              << independent);
  CHECK(joint < 0.5 * independent);
  CHECK(make_sampler("tpe-multivariate", 0)->name() == "tpe-multivariate");
  // one objective: the same sampler as "tpe" (multivariate there already), proposal for proposal
  auto mv = make_sampler("tpe-multivariate", 3), tpe = make_sampler("tpe", 3);
  for (Trial& t : h) t.value = -t.objectives[0];
  CHECK(*mv->sample(space, h, 100) == *tpe->sample(space, h, 100));
}

TEST_CASE("tpe, several objectives: a study of three runs end to end and keeps its sampler") {
  test::TempDir dir;
  const std::string db = dir.file("m.db");
  Space space;
  space.real("x", 0, 1);
  space.integer("n", 1, 8);
  const std::vector<Direction> dirs = {Direction::maximize, Direction::minimize,
                                       Direction::minimize};
  Study s = Study::open(db, "three", space, dirs, make_sampler("tpe", 2), 2);
  s.optimize([](const Params& p, int64_t) {
    Outcome o;
    const double x = p.real("x"), n = static_cast<double>(p.integer("n"));
    o.values = {x * n, n + x, (1 - x) * (1 - x)};
    return o;
  }, 24);
  CHECK(s.trials().size() == 24);
  CHECK(!s.pareto_front().empty());
  CHECK(query_one(db, "SELECT value_json FROM study_system_attributes WHERE key = "
                      "'mase:sampler'") == "\"tpe\"");
  // and goes on after a load, with the sampler it was made with
  Study again = Study::load(db, "three");
  CHECK(again.directions() == dirs);
  auto t = again.ask();
  REQUIRE(t);
  CHECK(t->number == 24);
}

TEST_CASE("tpe, several objectives: on ZDT1 its front beats random's (5 seeds, 100 trials)") {
  // ZDT1's front is the curve f2 = 1 - sqrt(f1); random points mostly sit far above it (g
  // averages 5.5). TPE's good trials are its front, so it pulls x2..x5 towards 0. A margin,
  // not a timing: TPE must win on average by 0.5 and on at least 4 of 5 seeds. (Seeds 1-5
  // give TPE 4.28..4.68 and random 3.06..3.42; Optuna 5.0's own TPESampler and RandomSampler
  // average 4.37 and 3.43 on the same problem over its seeds 1-10: docs/lab2.md.)
  double tpe_sum = 0, random_sum = 0;
  int wins = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const double t = zdt1_hypervolume("tpe", seed, 100), r = zdt1_hypervolume("random", seed, 100);
    MESSAGE("seed " << seed << ": tpe " << t << ", random " << r);
    tpe_sum += t;
    random_sum += r;
    wins += t > r;
  }
  CHECK(tpe_sum / 5 > random_sum / 5 + 0.5);
  CHECK(wins >= 4);
}

}  // namespace test_tpe_multi
