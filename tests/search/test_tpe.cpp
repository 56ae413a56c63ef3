// tests/search/test_tpe.cpp — the TPE sampler (search/tpe.h) against independent oracles:
//   hand arithmetic (gamma, weights, small Parzen estimators, normal-table values);
//   Optuna 5.0 itself (tests/fixtures/search/tpe_parzen.json, made by make_tpe_fixture.py);
//   the laws of probability (masses sum to 1, densities integrate to 1, samples follow log_pdf);
//   behaviour (reproducible, random for the first 10 trials, beats random search).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "search/sampler.h"
#include "search/tpe.h"
#include "search/check_close.h"

using namespace mase::search;

namespace {

Param real_param(double low, double high, bool log = false) {
  Param p;
  p.name = "x";
  p.kind = Param::Kind::real;
  p.low = low;
  p.high = high;
  p.log = log;
  return p;
}

Param int_param(double low, double high, double step = 1, bool log = false) {
  Param p = real_param(low, high, log);
  p.kind = Param::Kind::integer;
  p.step = step;
  return p;
}

Param cat_param(int n) {
  Param p;
  p.name = "x";
  p.kind = Param::Kind::categorical;
  for (int i = 0; i < n; ++i) p.choices.push_back("c" + std::to_string(i));
  return p;
}

}  // namespace

TEST_CASE("tpe_gamma: min(ceil(n / 10), 25), by hand") {
  CHECK(tpe_gamma(0) == 0);
  CHECK(tpe_gamma(1) == 1);
  CHECK(tpe_gamma(10) == 1);
  CHECK(tpe_gamma(11) == 2);
  CHECK(tpe_gamma(40) == 4);
  CHECK(tpe_gamma(41) == 5);
  CHECK(tpe_gamma(240) == 24);
  CHECK(tpe_gamma(241) == 25);
  CHECK(tpe_gamma(300) == 25);
}

TEST_CASE("tpe_weights: ones below 25, then a ramp from 1/n to 1 for the oldest n - 25") {
  CHECK(tpe_weights(0).empty());
  CHECK(tpe_weights(24) == std::vector<double>(24, 1.0));
  CHECK(tpe_weights(25) == std::vector<double>(25, 1.0));  // a ramp of length 0
  // n = 26: a ramp of one point, linspace(1/26, 1, 1) = [1/26].
  auto w26 = tpe_weights(26);
  CHECK(w26[0] == doctest::Approx(1.0 / 26));
  CHECK(w26[1] == 1.0);
  // n = 30: a ramp of 5, 1/30 + i (1 - 1/30) / 4 = 4/120 + i 29/120 = 4/120, 33/120, 62/120,
  // 91/120, 120/120; then 25 ones.
  auto w = tpe_weights(30);
  REQUIRE(w.size() == 30);
  std::vector<double> ramp = {4.0 / 120, 33.0 / 120, 62.0 / 120, 91.0 / 120, 1.0};
  for (int i = 0; i < 5; ++i) CHECK(w[i] == doctest::Approx(ramp[i]).epsilon(1e-14));
  for (int i = 5; i < 30; ++i) CHECK(w[i] == 1.0);
}

TEST_CASE("ParzenEstimator, real: sigmas are neighbour gaps, clipped; weights include the prior") {
  // Real [0, 1], observations 0.5, 0.1, 0.15 (oldest first), prior_weight 1.
  //   weights: 1, 1, 1 and the prior's 1, normalised -> 1/4 each.
  //   sorted mus with the ends: 0 | 0.1 0.15 0.5 | 1
  //     0.1  (an end one): inner gap only          0.05
  //     0.15: max(0.05, 0.35)                      0.35
  //     0.5  (an end one): inner gap only          0.35
  //   clip to [1 / min(100, 3 + 2), 1] = [0.2, 1]: 0.05 -> 0.2.
  //   in observation order: 0.35, 0.2, 0.35; the prior: mu 0.5, sigma 1.
  Param p = real_param(0, 1);
  ParzenEstimator pe(p, {0.5, 0.1, 0.15}, 1.0);
  check_close(pe.weights(), {0.25, 0.25, 0.25, 0.25}, 1e-15, "weights");
  check_close(pe.mus(), {0.5, 0.1, 0.15, 0.5}, 1e-15, "mus");
  check_close(pe.sigmas(), {0.35, 0.2, 0.35, 1.0}, 1e-15, "sigmas");

  // One observation, 0.8: no inner gap, so its gaps to both ends count: max(0.8, 0.2) = 0.8
  // (clip [1/3, 1] leaves it).
  ParzenEstimator one(p, {0.8}, 1.0);
  check_close(one.sigmas(), {0.8, 1.0}, 1e-15, "one observation");

  // No observations: the prior alone, N(0.5, 1) truncated to [0, 1]. Its density at 0.5 is
  // phi(0) / (Phi(0.5) - Phi(-0.5)) = 0.3989422804014327 / (2 * 0.6914624612740131 - 1)
  // = 0.3989422804014327 / 0.3829249225480262 (normal tables).
  ParzenEstimator prior(p, {}, 1.0);
  CHECK(prior.weights() == std::vector<double>{1.0});
  CHECK(prior.log_pdf(0.5) ==
        doctest::Approx(std::log(0.3989422804014327 / 0.3829249225480262)).epsilon(1e-12));
}

TEST_CASE("ParzenEstimator, log real: kernels in log space") {
  // Real [1e-3, 1] log, observations 0.01, 0.1: in log space lo = -3 ln10, hi = 0, mus -2 ln10,
  // -ln10. Two observations: both are end ones, each takes the inner gap ln10; the clip
  // [3 ln10 / 4, 3 ln10] leaves it. The prior: mu -1.5 ln10, sigma 3 ln10. Weights 1/3.
  const double ln10 = std::log(10.0);
  Param p = real_param(1e-3, 1, true);
  ParzenEstimator pe(p, {0.01, 0.1}, 1.0);
  check_close(pe.weights(), {1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15, "weights");
  check_close(pe.mus(), {-2 * ln10, -ln10, -1.5 * ln10}, 1e-14, "mus");
  check_close(pe.sigmas(), {ln10, ln10, 3 * ln10}, 1e-14, "sigmas");
}

TEST_CASE("ParzenEstimator, integer: kernels widened by half a step each side, bins as masses") {
  // Integer 1..5, observations 2, 2, 5: range [0.5, 5.5], width 5.
  //   sorted with ends: 0.5 | 2 2 5 | 5.5 -> first 2: inner gap 0; second 2: max(0, 3) = 3;
  //   5: inner gap 3. Clip [5 / 5, 5] = [1, 5]: 0 -> 1. Prior: mu 3, sigma 5. Weights 1/4.
  Param p = int_param(1, 5);
  ParzenEstimator pe(p, {2, 2, 5}, 1.0);
  check_close(pe.mus(), {2, 2, 5, 3}, 1e-15, "mus");
  check_close(pe.sigmas(), {1, 3, 3, 5}, 1e-15, "sigmas");

  // The prior alone: P(3) = (Phi(0.1) - Phi(-0.1)) / (Phi(0.5) - Phi(-0.5))
  //                       = (2 * 0.539827837277029 - 1) / 0.3829249225480262 (normal tables).
  ParzenEstimator prior(p, {}, 1.0);
  CHECK(std::exp(prior.log_pdf(3)) ==
        doctest::Approx((2 * 0.539827837277029 - 1) / 0.3829249225480262).epsilon(1e-12));
}

TEST_CASE("ParzenEstimator, categorical: observed choice + prior_weight/(n+1) everywhere") {
  // 3 choices, observations 0, 2, 2: every cell starts at 1/4, the observed one gets +1:
  //   row 0 [1.25, .25, .25] / 1.75 = [5/7, 1/7, 1/7]; rows 1, 2: [1/7, 1/7, 5/7];
  //   prior row: uniform 1/3. Weights 1/4 each.
  //   P(2) = (1/7 + 5/7 + 5/7 + 1/3) / 4 = (40/21) / 4 = 10/21.
  Param p = cat_param(3);
  ParzenEstimator pe(p, {0, 2, 2}, 1.0);
  check_close(pe.choice_probs(),
              {5. / 7, 1. / 7, 1. / 7, 1. / 7, 1. / 7, 5. / 7, 1. / 7, 1. / 7, 5. / 7, 1. / 3,
               1. / 3, 1. / 3},
              1e-15, "choice_probs");
  CHECK(pe.log_pdf(2) == doctest::Approx(std::log(10.0 / 21)).epsilon(1e-14));
  CHECK_THROWS_AS(pe.log_pdf(3), mase::ConfigError);
  CHECK_THROWS_AS(ParzenEstimator(p, {0, 3}, 1.0), mase::ConfigError);  // 3 is not a choice
  CHECK_THROWS_AS(ParzenEstimator(p, {0}, -1.0), mase::ConfigError);
}

TEST_CASE("ParzenEstimator matches Optuna's _ParzenEstimator (fixture)") {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/tpe_parzen.json");
  REQUIRE(in.good());
  auto fx = nlohmann::json::parse(in);
  MESSAGE("fixture from optuna " << fx["optuna_version"].get<std::string>());

  auto gamma = fx["gamma"].get<std::vector<int>>();
  for (int n = 0; n < static_cast<int>(gamma.size()); ++n) CHECK(tpe_gamma(n) == gamma[n]);
  for (auto& [n, w] : fx["weights"].items())
    check_close(tpe_weights(std::stoi(n)), w.get<std::vector<double>>(), 1e-12, "weights " + n);

  const double rel = 1e-9;
  for (const auto& c : fx["cases"]) {
    const std::string name = c["name"];
    INFO("case: " << name);
    const auto& sp = c["param"];
    Param p;
    p.name = "x";
    if (sp["kind"] == "categorical") {
      p = cat_param(sp["n_choices"].get<int>());
    } else {
      p.kind = sp["kind"] == "integer" ? Param::Kind::integer : Param::Kind::real;
      p.low = sp["low"];
      p.high = sp["high"];
      p.step = sp["step"];
      p.log = sp["log"];
    }
    ParzenEstimator pe(p, c["observations"].get<std::vector<double>>(), c["prior_weight"]);
    check_close(pe.weights(), c["weights"].get<std::vector<double>>(), rel, "weights");
    if (p.kind == Param::Kind::categorical) {
      check_close(pe.choice_probs(), c["choice_probs"].get<std::vector<double>>(), rel, "probs");
    } else {
      check_close(pe.mus(), c["mus"].get<std::vector<double>>(), rel, "mus");
      check_close(pe.sigmas(), c["sigmas"].get<std::vector<double>>(), rel, "sigmas");
    }
    for (const auto& pt : c["log_pdf"]) {
      const double x = pt[0], want = pt[1];
      INFO("log_pdf at " << x);
      CHECK(pe.log_pdf(x) == doctest::Approx(want).epsilon(rel));
    }
    // Optuna's sampler driven by the same uniforms: the same component, the same quantile.
    for (const auto& s : c["samples"]) {
      const double uc = s[0], uv = s[1], want = s[2];
      INFO("sample at u_component " << uc << ", u_value " << uv);
      CHECK(pe.sample(uc, uv, 0.5) == doctest::Approx(want).epsilon(rel));
    }
  }
}

TEST_CASE("ParzenEstimator: integer masses sum to 1, real densities integrate to 1") {
  // Integers: the bins tile [low - step/2, high + step/2], so the masses must sum to 1.
  for (bool log : {false, true}) {
    Param p = log ? int_param(1, 300, 1, true) : int_param(-10, 40, 5);
    auto obs = log ? std::vector<double>{3, 250, 17, 18} : std::vector<double>{0, 35, -10};
    ParzenEstimator pe(p, obs, 1);
    double total = 0;
    for (double x = p.low; x <= p.high; x += p.step) total += std::exp(pe.log_pdf(x));
    CHECK(total == doctest::Approx(1.0).epsilon(1e-10));
  }
  // Reals: Simpson's rule over the (transformed) range, 2000 intervals.
  for (bool log : {false, true}) {
    Param p = log ? real_param(1e-4, 1, true) : real_param(-2, 3);
    auto obs = log ? std::vector<double>{1e-3, 2e-3, 0.5} : std::vector<double>{-1.9, 0, 0.1, 2.5};
    ParzenEstimator pe(p, obs, 1);
    const double lo = log ? std::log(p.low) : p.low, hi = log ? std::log(p.high) : p.high;
    const int n = 2000;
    const double h = (hi - lo) / n;
    double s = 0;
    for (int i = 0; i <= n; ++i) {
      double t = i == n ? hi : lo + i * h;
      double x = log ? std::exp(t) : t;
      x = std::clamp(x, p.low, p.high);
      s += (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2)) * std::exp(pe.log_pdf(x));
    }
    CHECK(s * h / 3 == doctest::Approx(1.0).epsilon(1e-8));
  }
}

TEST_CASE("ParzenEstimator: samples follow log_pdf (integer histogram)") {
  // 40000 draws from Philox uniforms; each value's frequency against exp(log_pdf): the standard
  // error is at most sqrt(0.25 / 40000) = 0.0025, so 0.012 is ~5 standard errors.
  Param p = int_param(0, 12);
  ParzenEstimator pe(p, {2, 3, 11, 7, 3}, 1.0);
  std::vector<double> count(13, 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    double x = pe.sample(unit_uniform(5, 77, 3 * i), unit_uniform(5, 77, 3 * i + 1),
                         unit_uniform(5, 77, 3 * i + 2));
    REQUIRE(p.contains(x));
    count[static_cast<size_t>(x)] += 1;
  }
  for (int x = 0; x <= 12; ++x) {
    INFO("value " << x);
    CHECK(std::abs(count[x] / n - std::exp(pe.log_pdf(x))) < 0.012);
  }
}

namespace {

using ObjectiveFn = std::function<double(const Space&, const Values&)>;

// A study in a loop: ask the sampler, evaluate, record a complete trial. Returns every value.
std::vector<double> run(Sampler& sampler, const Space& space, const ObjectiveFn& f, int n_trials,
                        std::vector<Trial>* history_out = nullptr) {
  std::vector<Trial> history;
  std::vector<double> values;
  for (int n = 0; n < n_trials; ++n) {
    Trial t;
    t.number = n;
    t.values = *sampler.sample(space, history, n);
    for (const Param& p : space.params()) REQUIRE(p.contains(t.values.at(p.name)));
    t.value = f(space, t.values);
    t.state = TrialState::complete;
    history.push_back(t);
    values.push_back(t.value);
  }
  if (history_out) *history_out = history;
  return values;
}

double best_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

double mean_from(const std::vector<double>& v, size_t first) {
  double s = 0;
  for (size_t i = first; i < v.size(); ++i) s += v[i];
  return s / static_cast<double>(v.size() - first);
}

}  // namespace

TEST_CASE("TpeSampler: reproducible, and random (= RandomSampler) for the first 10 trials") {
  Space space;
  space.real("lr", 1e-5, 1e-1, true)
      .integer("layers", 1, 8)
      .categorical("act", {"relu", "gelu", "tanh"});
  ObjectiveFn f = [](const Space&, const Values& v) {
    return -std::abs(std::log10(v.at("lr")) + 3) - 0.1 * v.at("layers") +
           (v.at("act") == 1 ? 1 : 0);
  };
  TpeSampler a(11), b(11);
  std::vector<Trial> history;
  auto va = run(a, space, f, 25, &history);
  auto vb = run(b, space, f, 25);
  CHECK(va == vb);

  RandomSampler random(11);
  for (int n = 0; n < 10; ++n) {
    std::vector<Trial> before(history.begin(), history.begin() + n);
    CHECK(random.sample(space, before, n) == history[n].values);
  }
  // From trial 10 on TPE proposes its own values (the same history, asked twice: the same answer).
  std::vector<Trial> first10(history.begin(), history.begin() + 10);
  CHECK(*a.sample(space, first10, 10) != *random.sample(space, first10, 10));
  CHECK(*a.sample(space, first10, 10) == *b.sample(space, first10, 10));

  // Failed and running trials do not count towards the 10: still random.
  std::vector<Trial> mixed(history.begin(), history.begin() + 9);
  for (int i = 0; i < 3; ++i) {
    Trial t = history[9 + i];
    t.number = 9 + i;
    t.state = i == 0 ? TrialState::failed : TrialState::running;
    mixed.push_back(t);
  }
  CHECK(*a.sample(space, mixed, 12) == *random.sample(space, mixed, 12));

  CHECK_THROWS_AS(TpeSampler(1, TpeOptions{10, 0, 1.0}).sample(space, history, 25),
                  mase::ConfigError);
}

TEST_CASE("TpeSampler beats random search: 1-D real and a mixed categorical x integer space") {
  // Deterministic (fixed seeds). TPE's advantage shows in the best of 40 and, by a wide margin,
  // in the mean of trials 10..39 (the modelled ones); swapping l and g would make both worse
  // than random, as the sampler would then seek the bad region.
  struct Problem {
    std::string name;
    Space space;
    ObjectiveFn f;
  };
  std::vector<Problem> problems;
  {
    Space s;
    s.real("x", 0, 1);
    problems.push_back({"-(x - 0.3)^2", s, [](const Space&, const Values& v) {
                          return -(v.at("x") - 0.3) * (v.at("x") - 0.3);
                        }});
  }
  {
    Space s;
    s.categorical("kind", {"a", "b", "c", "d"}).integer("n", 0, 60);
    problems.push_back({"bonus[kind] - |n - 37| / 60", s, [](const Space&, const Values& v) {
                          const double bonus[] = {0.0, 0.3, 1.0, 0.2};
                          return bonus[static_cast<int>(v.at("kind"))] -
                                 std::abs(v.at("n") - 37) / 60;
                        }});
  }
  for (const Problem& pb : problems) {
    INFO(pb.name);
    double tpe_best = 0, random_best = 0, tpe_mean = 0, random_mean = 0;
    const int seeds = 10;
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      TpeSampler tpe(seed);
      RandomSampler random(seed);
      auto vt = run(tpe, pb.space, pb.f, 40);
      auto vr = run(random, pb.space, pb.f, 40);
      tpe_best += best_of(vt) / seeds;
      random_best += best_of(vr) / seeds;
      tpe_mean += mean_from(vt, 10) / seeds;
      random_mean += mean_from(vr, 10) / seeds;
    }
    MESSAGE(pb.name << ": best-of-40 tpe " << tpe_best << " random " << random_best
                    << "; mean of trials 10..39 tpe " << tpe_mean << " random " << random_mean);
    CHECK(tpe_best > random_best);
    CHECK(tpe_mean > random_mean);
  }
}
