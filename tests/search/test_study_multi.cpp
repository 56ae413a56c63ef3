// tests/search/test_study_multi.cpp — studies of several objectives (search/study.h,
// search/nsga2.h): stored in Optuna's tables as Optuna stores them (one study_directions row
// and one trial_values row per objective, NSGA-II's generation per trial, the metric names),
// the Pareto front by hand, refusals, and a study Optuna's own NSGA-II made
// (tests/fixtures/search/optuna_multi.db, make_optuna_multi.py) read back and continued — its
// cached parents of each generation found again by mase from the trials alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/nsga2.h"
#include "search/study.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::vector<Direction> kAccBits = {Direction::maximize, Direction::minimize};

Space xn_space() {
  Space s;
  s.real("x", 0, 1);
  s.integer("n", 1, 8);
  return s;
}

// the objective of make_optuna_multi.py: (accuracy up, bits down)
Outcome acc_bits(const Params& p, int64_t) {
  const double x = p.real("x");
  const auto n = static_cast<double>(p.integer("n"));
  Outcome o;
  o.values = {x * n / 8 + 0.1 * std::fmod(n, 3.0), n + 4 * x};
  return o;
}


}  // namespace

TEST_CASE("multi-objective study: stored as Optuna stores it; front, CSV, reopening") {
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  Study s = Study::open(db, "pareto", xn_space(), kAccBits, make_sampler("nsga2:4", 5), 5);
  s.set_metric_names({"accuracy", "bits"});
  s.optimize(acc_bits, 12);
  // one direction row and one value row per objective
  CHECK(query_one(db, "SELECT group_concat(direction, ',') FROM (SELECT direction FROM "
                      "study_directions ORDER BY objective)") == "MAXIMIZE,MINIMIZE");
  CHECK(query_one(db, "SELECT count(*) FROM trial_values") == "24");
  // generations of 4 complete trials, as Optuna's NSGA-II numbers them
  CHECK(query_one(db, "SELECT group_concat(value_json, ',') FROM (SELECT a.value_json FROM "
                      "trial_system_attributes a JOIN trials t ON t.trial_id = a.trial_id "
                      "WHERE a.key = 'NSGAIISampler:generation' ORDER BY t.number)") ==
        "0,0,0,0,1,1,1,1,2,2,2,2");
  const std::vector<TrialRecord> all = s.trials();
  REQUIRE(all.size() == 12);
  for (const TrialRecord& r : all) {
    REQUIRE(r.trial.objectives.size() == 2);
    CHECK(r.trial.value == r.trial.objectives[0]);
  }
  // the front by brute force: no other trial at least as good in both and better in one
  std::set<int64_t> want;
  for (const TrialRecord& a : all) {
    bool dominated = false;
    for (const TrialRecord& b : all)
      dominated = dominated || nsga2::dominates(b.trial.objectives, a.trial.objectives, kAccBits);
    if (!dominated) want.insert(a.trial.number);
  }
  std::set<int64_t> got;
  for (const TrialRecord& r : s.pareto_front()) got.insert(r.trial.number);
  CHECK(got == want);
  CHECK_FALSE(got.empty());
  CHECK(error_of<ConfigError>([&] { (void)s.best(); }) ==
        "[study] study 'pareto' has 2 objectives: no single best trial (its Pareto front "
        "instead)");
  // CSV: Optuna's trials_dataframe column names
  s.write_csv((dir.path / "p.csv").string());
  const std::string csv = file_text((dir.path / "p.csv").string());
  CHECK(csv.rfind("number,state,values_accuracy,values_bits,n,x\n", 0) == 0);
  CHECK(s.metric_names() == std::vector<std::string>{"accuracy", "bits"});

  // reopened with the directions it has: goes on (generation 2 has its 4: the next is 3)
  Study again = Study::load(db, "pareto");
  CHECK(again.directions() == kAccBits);
  again.optimize(acc_bits, 1);
  CHECK(query_one(db, "SELECT a.value_json FROM trial_system_attributes a JOIN trials t ON "
                      "t.trial_id = a.trial_id WHERE a.key = 'NSGAIISampler:generation' AND "
                      "t.number = 12") == "3");
  // other directions, or one: refused, naming both
  CHECK(error_of<ConfigError>([&] {
          Study::open(db, "pareto", xn_space(), {Direction::maximize, Direction::maximize},
                      make_sampler("nsga2:4", 5), 5);
        }) == "[study] study 'pareto' in " + db +
                  " was created with directions maximize, minimize, not maximize, maximize "
                  "(use another --study name or file)");
  CHECK(contains(error_of<ConfigError>([&] {
                   Study::open(db, "pareto", xn_space(), Direction::maximize,
                               make_sampler("nsga2:4", 5), 5);
                 }),
                 "was created with directions maximize, minimize, not maximize"));
}

TEST_CASE("multi-objective study: refusals and NaN") {
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  // a sampler that ranks one value: refused before the file is made
  struct OneValue : Sampler {
    std::string name() const override { return "one-value"; }
    std::optional<Values> sample(const Space&, const std::vector<Trial>&, int64_t) override {
      return std::nullopt;
    }
  };
  CHECK(error_of<ConfigError>([&] {
          Study::open(db, "t", xn_space(), kAccBits, std::make_unique<OneValue>(), 0);
        }) == "[sampler] one-value ranks one objective, got 2 (for several objectives use tpe, "
              "tpe-independent, tpe-multivariate, nsga2, random or grid)");
  CHECK_FALSE(fs::exists(db));
  Study s = Study::open(db, "r", xn_space(), kAccBits, make_sampler("random", 0), 0);
  auto t = s.ask();
  REQUIRE(t);
  CHECK(error_of<ConfigError>([&] { s.tell(t->number, TrialState::complete, 0.5); }) ==
        "[study] tell(trial 0) expected 2 values (one per objective), got one");
  CHECK(error_of<ConfigError>([&] {
          s.tell(t->number, TrialState::complete, std::vector<double>{0.5});
        }) == "[study] tell(trial 0) expected 2 values (one per objective), got 1");
  CHECK(error_of<ConfigError>([&] { s.report(t->number, 1, 0.5); }) ==
        "[study] report(trial 0) expected a study of one objective, got 2 (as in Optuna, a "
        "pruner judges one)");
  CHECK(error_of<ConfigError>([&] { s.set_metric_names({"a"}); }) ==
        "[study] study 'r' expected 2 metric names (one per objective), got 1");
  // a NaN among the values: failed, as in Optuna
  s.tell(t->number, TrialState::complete, std::vector<double>{0.5, NAN});
  CHECK(s.trials().at(0).trial.state == TrialState::failed);
  CHECK(s.trials().at(0).attrs.at("error") == "the objective returned nan");
  // ±inf are values (stored as NULL with their kind, as Optuna does)
  t = s.ask();
  s.tell(t->number, TrialState::complete, std::vector<double>{INFINITY, -INFINITY});
  const TrialRecord r = s.trials().at(1);
  CHECK(r.trial.objectives == std::vector<double>{INFINITY, -INFINITY});
}

TEST_CASE("multi-objective study: one Optuna's NSGA-II made, read and continued by mase") {
  TempDir dir;
  const std::string fixture = std::string(MASE_FIXTURES_DIR) + "/search/optuna_multi.db";
  const std::string db = (dir.path / "optuna_multi.db").string();
  fs::copy_file(fixture, db);
  // loaded as Optuna left it, which records nothing: the sampler is a guess, Optuna 5.0's
  // default TPESampler (here a wrong one: the script asked for NSGA-II)
  CHECK(Study::load(db, "pareto").directions() == kAccBits);
  CHECK(query_one(db, "SELECT count(*) FROM study_system_attributes WHERE key LIKE 'mase:%'") ==
        "0");
  {  // on a copy: a trial the loaded study asks for is TPE's (no NSGA-II generation)
    const std::string copy = (dir.path / "loaded.db").string();
    fs::copy_file(fixture, copy);
    auto t = Study::load(copy, "pareto").ask();
    REQUIRE(t);
    CHECK(t->number == 14);
    CHECK(t->generation == -1);
  }
  // opened with the population its Optuna script used, as `--sampler nsga2 --population 4`
  Study s = Study::open(db, "pareto", xn_space(), kAccBits, make_sampler("nsga2:4", 1), 1);
  CHECK(s.directions() == kAccBits);
  CHECK(s.metric_names() == std::vector<std::string>{"accuracy", "bits"});
  const std::vector<TrialRecord> all = s.trials();
  REQUIRE(all.size() == 14);
  // trial 0 as Optuna printed it (make_optuna_multi.py)
  CHECK(all[0].trial.objectives[0] == doctest::Approx(0.41309842693093163).epsilon(1e-15));
  CHECK(all[0].trial.objectives[1] == doctest::Approx(8.203191610298301).epsilon(1e-15));
  for (const TrialRecord& r : all) CHECK(r.trial.generation == r.trial.number / 4);
  // Optuna's best_trials
  std::set<int64_t> front;
  for (const TrialRecord& r : s.pareto_front()) front.insert(r.trial.number);
  CHECK(front == std::set<int64_t>{1, 2, 3, 11, 13});
  // Optuna cached each generation's parents (trial ids, which are numbers + 1 here):
  // parent:1 = [3, 4, 1, 2], parent:2 = parent:3 = [3, 4, 6, 2]. mase recomputes them.
  Nsga2Options o;
  o.population_size = 4;
  Nsga2Sampler nsga(0, o);
  nsga.set_directions(kAccBits);
  std::vector<Trial> history;
  for (const TrialRecord& r : all) history.push_back(r.trial);
  auto parent_numbers = [&](int64_t g) {
    std::vector<int64_t> out;
    for (size_t i : nsga.parents(history, g)) out.push_back(history[i].number);
    return out;
  };
  CHECK(parent_numbers(1) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(parent_numbers(2) == std::vector<int64_t>{1, 2, 3, 5});
  CHECK(parent_numbers(3) == std::vector<int64_t>{1, 2, 3, 5});
  CHECK(nsga.next_generation(history) == 3);
  // continued by mase with Optuna's population: trial 14 joins generation 3, 16 starts the 4th
  s.optimize(acc_bits, 3);
  const std::vector<TrialRecord> now = s.trials();
  REQUIRE(now.size() == 17);
  CHECK(now[14].trial.generation == 3);
  CHECK(now[15].trial.generation == 3);
  CHECK(now[16].trial.generation == 4);
}

TEST_CASE("multi-objective study: optimize fails a trial whose objective gives the wrong count") {
  // Optuna's optimize: "The number of the values 1 did not match the number of the objectives
  // 2" fails that trial and goes on. mase's too, with the trial failed, never left running.
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  Study s = Study::open(db, "w", xn_space(), kAccBits, make_sampler("random", 0), 0);
  int64_t calls = 0;
  s.optimize(
      [&](const Params& p, int64_t n) {
        Outcome o = acc_bits(p, n);
        if (calls == 0) o.values.clear();              // one value (o.value) for two objectives
        if (calls == 1) o.values.push_back(1);         // three for two
        ++calls;
        return o;
      },
      3);
  const std::vector<TrialRecord> all = s.trials();
  REQUIRE(all.size() == 3);
  CHECK(all[0].trial.state == TrialState::failed);
  CHECK(all[0].attrs.at("error") ==
        "the objective returned 1 value, expected 2 (one per objective)");
  CHECK(all[1].trial.state == TrialState::failed);
  CHECK(all[1].attrs.at("error") ==
        "the objective returned 3 values, expected 2 (one per objective)");
  CHECK(all[2].trial.state == TrialState::complete);
  // and a study of one objective given two
  Study one = Study::open(db, "one", xn_space(), Direction::maximize, make_sampler("random", 0), 0);
  one.optimize(acc_bits, 1);
  REQUIRE(one.trials().size() == 1);
  CHECK(one.trials()[0].trial.state == TrialState::failed);
  CHECK(one.trials()[0].attrs.at("error") ==
        "the objective returned 2 values, expected 1 (one per objective)");
}

TEST_CASE("multi-objective study: a pruned trial keeps every value or none") {
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  Study s = Study::open(db, "p", xn_space(), kAccBits, make_sampler("random", 0), 0);
  auto rows_of = [&](int64_t number) {
    return query_one(db, cat("SELECT count(*) FROM trial_values v JOIN trials t ON t.trial_id = "
                             "v.trial_id WHERE t.number = ", number));
  };
  // a NaN among them: none (objective 1's row alone is a study Optuna cannot read: its
  // storage fills values[objective] of a list as long as the rows, an IndexError)
  auto t = s.ask();
  s.tell(t->number, TrialState::pruned, std::vector<double>{NAN, 0.5});
  CHECK(s.trials().at(0).trial.state == TrialState::pruned);
  CHECK(rows_of(0) == "0");
  CHECK(s.trials().at(0).trial.objectives.empty());
  // pruned with no values at all, as Optuna's tell(state=PRUNED) in a study of several
  t = s.ask();
  CHECK_NOTHROW(s.tell(t->number, TrialState::pruned, 0.0));
  CHECK(s.trials().at(1).trial.state == TrialState::pruned);
  CHECK(rows_of(1) == "0");
  t = s.ask();
  s.tell(t->number, Outcome{0, {}, TrialState::pruned, {}});
  CHECK(rows_of(2) == "0");
  // every value: all kept
  t = s.ask();
  s.tell(t->number, TrialState::pruned, std::vector<double>{0.7, 3});
  CHECK(rows_of(3) == "2");
  CHECK(s.trials().at(3).trial.objectives == std::vector<double>{0.7, 3});
  // the one-value form still refuses a complete trial
  t = s.ask();
  CHECK(error_of<ConfigError>([&] { s.tell(t->number, TrialState::complete, 0.5); }) ==
        "[study] tell(trial 4) expected 2 values (one per objective), got one");
}

TEST_CASE("study CSV: a trial with no value has empty value cells, in one objective or several") {
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  // one objective: pruned at a NaN report keeps no value (Optuna's tell) — not a 0
  Study one = Study::open(db, "one", xn_space(), Direction::maximize, make_sampler("random", 0), 0);
  auto t = one.ask();
  one.tell(t->number, TrialState::pruned, NAN);
  t = one.ask();
  one.tell(t->number, TrialState::pruned, 0.25);
  one.write_csv((dir.path / "one.csv").string());
  const std::string csv = file_text((dir.path / "one.csv").string());
  CHECK(csv.find("\n0,pruned,,") != std::string::npos);
  CHECK(csv.find("\n1,pruned,0.25,") != std::string::npos);
  // several: a pruned trial without values, and ±inf as Optuna's dataframe shows them
  Study two = Study::open(db, "two", xn_space(), kAccBits, make_sampler("random", 0), 0);
  t = two.ask();
  two.tell(t->number, TrialState::pruned, 0.0);
  t = two.ask();
  two.tell(t->number, TrialState::complete, std::vector<double>{INFINITY, -INFINITY});
  two.write_csv((dir.path / "two.csv").string());
  const std::string csv2 = file_text((dir.path / "two.csv").string());
  CHECK(csv2.find("\n0,pruned,,,") != std::string::npos);
  CHECK(csv2.find("\n1,complete,inf,-inf,") != std::string::npos);
}

TEST_CASE("multi-objective study: a complete trial missing a value row is named, not ranked") {
  // Optuna never writes one (its own storage cannot read objective 1's row without objective
  // 0's back); a hand-edited or damaged file can have it. NSGA-II needs every parent's values:
  // the ask names the trial; the front leaves it out, as it leaves out a trial with no rows.
  TempDir dir;
  const std::string db = (dir.path / "optuna_multi.db").string();
  fs::copy_file(std::string(MASE_FIXTURES_DIR) + "/search/optuna_multi.db", db);
  // trial 3 (id 4) is on the front: (0.23, 2.50), the fewest bits; without its accuracy row
  raw_sql(db, "DELETE FROM trial_values WHERE trial_id = 4 AND objective = 0");
  Study s = Study::open(db, "pareto", xn_space(), kAccBits, make_sampler("nsga2:4", 1), 1);
  std::set<int64_t> front;
  for (const TrialRecord& r : s.pareto_front()) front.insert(r.trial.number);
  CHECK(front == std::set<int64_t>{1, 2, 9, 10, 11, 13});  // 9 and 10 were behind 3 alone
  CHECK(error_of<ConfigError>([&] { (void)s.ask(); }) ==
        "[nsga2] trial 3 expected 2 objective values, got 1 (a complete trial without every "
        "value row in trial_values: fail it, or delete it)");
  // none of its rows
  raw_sql(db, "DELETE FROM trial_values WHERE trial_id = 4");
  CHECK(error_of<ConfigError>([&] { (void)s.ask(); }) ==
        "[nsga2] trial 3 expected 2 objective values, got 0 (a complete trial without every "
        "value row in trial_values: fail it, or delete it)");
}

TEST_CASE("multi-objective study: a trial Optuna's RetryFailedTrialCallback left waiting is run") {
  // The callback re-adds a failed trial as WAITING with its params and a copy of every system
  // attribute: NSGA-II's generation, and a mase worker's pid, host and retry mark. Optuna runs
  // those params, keeping that generation (get_trial_generation returns a stored one). mase's
  // ask inserted them again and broke the UNIQUE rules: no worker could ask any more.
  TempDir dir;
  const std::string db = (dir.path / "optuna_multi.db").string();
  fs::copy_file(std::string(MASE_FIXTURES_DIR) + "/search/optuna_multi.db", db);
  // trial 11 (id 12, generation 2) failed in a mase worker; the callback queued trial 14 (id 15)
  raw_sql(db,
          "UPDATE trials SET state = 'FAIL' WHERE trial_id = 12;"
          "DELETE FROM trial_values WHERE trial_id = 12;"
          "INSERT INTO trials(trial_id, number, study_id, state) VALUES(15, 14, 1, 'WAITING');"
          "INSERT INTO trial_params(trial_id, param_name, param_value, distribution_json) "
          "SELECT 15, param_name, param_value, distribution_json FROM trial_params "
          "WHERE trial_id = 12;"
          "INSERT INTO trial_system_attributes(trial_id, key, value_json) VALUES "
          "(15, 'NSGAIISampler:generation', '2'), (15, 'failed_trial', '11'), "
          "(15, 'retry_history', '[11]'), (15, 'mase:pid', '999999999'), "
          "(15, 'mase:host', '\"elsewhere\"'), (15, 'mase:retry', '\"interrupted\"');");
  Study s = Study::open(db, "pareto", xn_space(), kAccBits, make_sampler("nsga2:4", 1), 1);
  const Values failed = s.trials().at(11).trial.values;
  auto t = s.ask();
  REQUIRE(t);
  CHECK(t->number == 14);
  CHECK(t->values == failed);  // its params, as Optuna runs them
  auto attr = [&](const std::string& key) {
    return query_one(db, "SELECT value_json FROM trial_system_attributes WHERE trial_id = 15 "
                         "AND key = '" + key + "'");
  };
  CHECK(attr("NSGAIISampler:generation") == "2");  // kept, as Optuna's get_trial_generation
  CHECK(attr("mase:pid") == std::to_string(getpid()));  // this worker runs it now
  CHECK(attr("mase:host") == "\"" + this_host() + "\"");
  CHECK(attr("mase:retry") == "");  // not a failed trial to retry if it fails by its own error
  CHECK(query_one(db, "SELECT count(*) FROM trial_params WHERE trial_id = 15") == "2");
  s.tell(t->number, TrialState::complete, std::vector<double>{0.5, 4});
  CHECK(s.trials().at(14).trial.state == TrialState::complete);
  CHECK(s.trials().at(14).trial.retry_of == 11);
  CHECK(s.ask());  // and the asks go on
}

TEST_CASE("multi-objective study: an interrupted trial run again keeps its NSGA-II generation") {
  // Optuna's RetryFailedTrialCallback copies the failed trial's system attributes, generation
  // included; mase's retry of an interrupted trial does the same. Population 2: trials 0, 1, 2
  // all start in generation 0 (none complete yet); 0 and 1 complete (generation 0 is full) and
  // 2 is interrupted. Its retry is generation 0 — a fresh trial would be generation 1.
  TempDir dir;
  const std::string db = (dir.path / "studies.db").string();
  Study s = Study::open(db, "r", xn_space(), kAccBits, make_sampler("nsga2:2", 0), 0);
  std::vector<Trial> t;
  for (int i = 0; i < 3; ++i) t.push_back(*s.ask());
  s.tell(0, TrialState::complete, std::vector<double>{0.5, 4});
  s.tell(1, TrialState::complete, std::vector<double>{0.6, 8});
  s.interrupted(2, "stopped by Ctrl-C");
  const Trial again = *s.ask();
  CHECK(again.retry_of == 2);
  CHECK(s.trials().at(3).trial.generation == 0);
  const Trial fresh = *s.ask();
  CHECK(fresh.retry_of == -1);
  CHECK(s.trials().at(4).trial.generation == 1);
}
