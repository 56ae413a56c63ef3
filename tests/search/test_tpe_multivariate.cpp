// tests/search/test_tpe_multivariate.cpp — multivariate TPE (search/tpe_multivariate.cpp) and
// the constant liar (search/tpe.h, step 2), against independent oracles:
//   Optuna 5.0 itself (tests/fixtures/search/tpe_multivariate.json, made by
//   make_tpe_mv_fixture.py): the joint estimator's weights, kernels, log_pdf and samples;
//   hand arithmetic: a joint density is the weighted sum of products of the marginals' kernels;
//   behaviour: a running trial's point is treated as bad while it runs (and not without the liar).
// Read test_tpe.cpp first (the one-parameter estimator).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "search/sampler.h"
#include "search/tpe.h"
#include "search/check_close.h"

using namespace mase::search;
using nlohmann::json;

namespace {

// The fixture's parameter specs as a Space (the builders sort by name, as the fixture does).
Space space_of(const json& specs) {
  Space s;
  for (const auto& [name, sp] : specs.items()) {
    if (sp["kind"] == "categorical") {
      std::vector<std::string> choices;
      for (int i = 0; i < sp["n_choices"].get<int>(); ++i) choices.push_back(std::to_string(i));
      s.categorical(name, choices);
    } else if (sp["kind"] == "integer") {
      s.integer(name, sp["low"].get<int64_t>(), sp["high"].get<int64_t>(),
                sp["step"].get<int64_t>(), sp["log"].get<bool>());
    } else {
      s.real(name, sp["low"].get<double>(), sp["high"].get<double>(), sp["log"].get<bool>());
    }
  }
  return s;
}

std::vector<const Param*> all_params(const Space& s) {
  std::vector<const Param*> out;
  for (const Param& p : s.params()) out.push_back(&p);
  return out;
}

Trial trial(int64_t number, TrialState state, double value, Values v) {
  Trial t;
  t.number = number;
  t.state = state;
  t.value = value;
  t.values = std::move(v);
  return t;
}

}  // namespace

TEST_CASE("MultivariateParzenEstimator matches Optuna's joint _ParzenEstimator (fixture)") {
  std::ifstream in(std::string(MASE_FIXTURES_DIR) + "/search/tpe_multivariate.json");
  REQUIRE(in.good());
  const json fx = json::parse(in);
  MESSAGE("fixture from optuna " << fx["optuna_version"].get<std::string>());
  const double rel = 1e-9;
  for (const auto& c : fx["cases"]) {
    INFO("case: " << c["name"].get<std::string>());
    const Space space = space_of(c["params"]);
    std::vector<Values> obs;
    for (const auto& o : c["observations"]) obs.push_back(o.get<Values>());
    MultivariateParzenEstimator pe(all_params(space), obs, c["prior_weight"],
                                   c["equal_weights"].get<bool>());
    check_close(pe.weights(), c["weights"].get<std::vector<double>>(), rel, "weights");
    for (size_t d = 0; d < space.params().size(); ++d) {
      const Param& p = space.params()[d];
      const json& m = c["marginals"][p.name];
      const ParzenEstimator& marginal = pe.marginals()[d];
      if (p.kind == Param::Kind::categorical) {
        check_close(marginal.choice_probs(), m["choice_probs"].get<std::vector<double>>(), rel,
                    p.name + " probs");
      } else {
        check_close(marginal.mus(), m["mus"].get<std::vector<double>>(), rel, p.name + " mus");
        check_close(marginal.sigmas(), m["sigmas"].get<std::vector<double>>(), rel,
                    p.name + " sigmas");
      }
    }
    for (const auto& pt : c["log_pdf"]) {
      INFO("log_pdf at " << pt[0].dump());
      CHECK(pe.log_pdf(pt[0].get<Values>()) == doctest::Approx(pt[1].get<double>()).epsilon(rel));
    }
    // Optuna's sampler driven by the same uniforms: one component for the whole point, every
    // parameter's value at the same quantile.
    for (const auto& s : c["samples"]) {
      const double uc = s[0], uv = s[1];
      INFO("sample at u_component " << uc << ", u_value " << uv);
      std::vector<double> u(1 + space.params().size(), uv);
      u[0] = uc;
      const Values got = pe.sample(u.data());
      for (const auto& [name, want] : s[2].items())
        CHECK(got.at(name) == doctest::Approx(want.get<double>()).epsilon(rel));
    }
  }
}

TEST_CASE("MultivariateParzenEstimator: the joint density is sum_k w_k prod_d kernel_kd, by hand") {
  // Two categoricals a (2 choices), b (3 choices), observations (a, b) = (0, 2), (1, 2).
  // Marginal a: rows [1 + 1/3, 1/3] / (5/3) = [4/5, 1/5] and [1/5, 4/5]; prior [1/2, 1/2].
  // Marginal b: 3 kernels, each cell 1/3 + 1 on the observed: rows [1/3, 1/3, 4/3] / 2 =
  //   [1/6, 1/6, 2/3] twice; prior [1/3, 1/3, 1/3]. Weights 1/3 each.
  // Joint at (0, 2): (4/5 * 2/3 + 1/5 * 2/3 + 1/2 * 1/3) / 3 = (2/3 + 1/6) / 3 = 5/18.
  // Independent marginals would give P(a=0) P(b=2) = (4/5 + 1/5 + 1/2)/3 * (2/3 + 2/3 + 1/3)/3
  //   = 1/2 * 5/9 = 5/18 as well; at (0, 0) the joint is (4/5 * 1/6 + 1/5 * 1/6 + 1/2 * 1/3) / 3
  //   = (1/6 + 1/6) / 3 = 1/9.
  Space s;
  s.categorical("a", {"x", "y"}).categorical("b", {"p", "q", "r"});
  MultivariateParzenEstimator pe(all_params(s), {{{"a", 0}, {"b", 2}}, {{"a", 1}, {"b", 2}}}, 1.0);
  CHECK(std::exp(pe.log_pdf({{"a", 0}, {"b", 2}})) == doctest::Approx(5.0 / 18).epsilon(1e-14));
  CHECK(std::exp(pe.log_pdf({{"a", 0}, {"b", 0}})) == doctest::Approx(1.0 / 9).epsilon(1e-14));
  // The joint masses sum to 1.
  double total = 0;
  for (double a : {0, 1})
    for (double b : {0, 1, 2}) total += std::exp(pe.log_pdf({{"a", a}, {"b", b}}));
  CHECK(total == doctest::Approx(1.0).epsilon(1e-14));

  CHECK_THROWS_AS(pe.log_pdf({{"a", 0}}), mase::ConfigError);  // b missing
  CHECK_THROWS_AS(MultivariateParzenEstimator({}, {}, 1.0), mase::ConfigError);
  CHECK_THROWS_AS(MultivariateParzenEstimator(all_params(s), {{{"a", 0}}}, 1.0),
                  mase::ConfigError);
}

TEST_CASE("constant liar: running trials are bad, and do not count in gamma's n") {
  std::vector<Trial> h;
  for (int i = 0; i < 12; ++i)
    h.push_back(trial(i, TrialState::complete, i == 4 || i == 9 ? 100.0 : i, {{"x", i % 3}}));
  h.push_back(trial(12, TrialState::running, 0, {{"x", 1}}));
  h.push_back(trial(13, TrialState::failed, 0, {{"x", 2}}));
  // 12 complete: gamma(12) = 2 good, trials 4 and 9 (value 100); the other 10 bad; the running
  // trial 12 is bad as well with the liar, absent without it; the failed one is never used.
  TpeSplit with = tpe_split(h, true), without = tpe_split(h, false);
  CHECK(with.n_complete == 12);
  CHECK(without.n_complete == 12);
  REQUIRE(with.good.size() == 2);
  CHECK(with.good[0]->number == 4);
  CHECK(with.good[1]->number == 9);
  CHECK(with.bad.size() == 11);
  CHECK(with.bad.back()->number == 12);  // oldest first: the running one is the newest
  CHECK(without.bad.size() == 10);
  for (const Trial* t : without.bad) CHECK(t->state == TrialState::complete);
}

TEST_CASE("constant liar: the point a running trial tries is proposed less while it runs") {
  // A 4 x 5 categorical space whose best point (2, 3) the good trials share. Trial 30 is running
  // at that point in another process. Asked for trials 31..230 with the same history, TPE with
  // the liar proposes (2, 3) clearly less often than without it, for both TPE flavours; and the
  // multivariate estimators built from the split rate (2, 3) lower with the liar.
  Space s;
  s.categorical("a", {"0", "1", "2", "3"}).categorical("b", {"0", "1", "2", "3", "4"});
  std::vector<Trial> h;
  for (int i = 0; i < 30; ++i) {
    const double a = i % 4, b = (i * 7) % 5;
    const double value = -std::abs(a - 2) - std::abs(b - 3);  // best 0 at (2, 3)
    h.push_back(trial(i, TrialState::complete, value, {{"a", a}, {"b", b}}));
  }
  const Values hot = {{"a", 2}, {"b", 3}};
  h.push_back(trial(30, TrialState::running, 0, hot));
  for (bool multivariate : {true, false}) {
    INFO("multivariate " << multivariate);
    int repeats[2] = {0, 0};  // without, with the liar
    for (bool liar : {false, true}) {
      TpeOptions o;
      o.multivariate = multivariate;
      o.constant_liar = liar;
      TpeSampler tpe(7, o);
      for (int64_t n = 31; n < 231; ++n) repeats[liar] += *tpe.sample(s, h, n) == hot;
    }
    MESSAGE("multivariate " << multivariate << ": (2, 3) proposed " << repeats[0]
                            << " times of 200 without the liar, " << repeats[1] << " with it");
    CHECK(repeats[0] > 40);  // without the liar TPE keeps proposing the running point
    CHECK(repeats[1] < repeats[0] / 2);
  }
  std::vector<const Param*> params = {&s.params()[0], &s.params()[1]};
  auto score = [&](bool liar) {
    TpeSplit split = tpe_split(h, liar);
    std::vector<Values> good, bad;
    for (const Trial* t : split.good) good.push_back(t->values);
    for (const Trial* t : split.bad) bad.push_back(t->values);
    return MultivariateParzenEstimator(params, good, 1.0).log_pdf(hot) -
           MultivariateParzenEstimator(params, bad, 1.0).log_pdf(hot);
  };
  CHECK(score(true) < score(false));
}

TEST_CASE("make_sampler: tpe is multivariate, tpe-independent is not; both keep their names") {
  CHECK(make_sampler("tpe", 1)->name() == "tpe");
  CHECK(make_sampler("tpe-independent", 1)->name() == "tpe-independent");
  // From trial 10 on the two propose differently for the same history; before, both are random.
  Space s;
  s.real("x", 0, 1).integer("n", 0, 9);
  std::vector<Trial> h;
  for (int i = 0; i < 10; ++i)
    h.push_back(trial(i, TrialState::complete, i, *RandomSampler(3).sample(s, h, i)));
  auto mv = make_sampler("tpe", 3), ind = make_sampler("tpe-independent", 3);
  CHECK(*mv->sample(s, {h.begin(), h.begin() + 9}, 9) ==
        *ind->sample(s, {h.begin(), h.begin() + 9}, 9));
  CHECK(*mv->sample(s, h, 10) != *ind->sample(s, h, 10));
  std::string msg;
  try {
    make_sampler("bayes", 1);
  } catch (const mase::ConfigError& e) {
    msg = e.what();
  }
  CHECK(msg == "[sampler] expected random, grid, tpe, tpe-independent, tpe-multivariate, nsga2 or "
               "nsga2:N, got 'bayes'");
}
