// tests/search/test_study_optuna.cpp — studies in Optuna's storage: a study an Optuna script made
// (tests/fixtures/search/optuna_study.db, written by make_optuna_study.py with Optuna 5.0) reads
// back trial by trial and is continued with ask/tell; a space that disagrees with it, a file of
// another Optuna schema revision, an empty or damaged file are refused with nothing changed; a
// file of mase's first schema is migrated. Oracles: the values the fixture script enqueued, and
// the rows as raw SQL sees them.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/study.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;

namespace {

// The fixture's space, as make_optuna_study.py declares it.
Space fixture_space(int64_t layers_high = 8) {
  Space s;
  s.categorical("act", {"relu", "gelu", "silu"})
      .integer("layers", 2, layers_high)
      .real("lr", 1e-5, 1e-2, true);
  return s;
}

// A copy of the fixture (the committed file is never opened for writing).
std::string fixture_copy(const TempDir& dir) {
  const std::string to = dir.file("studies.db");
  std::filesystem::copy_file(std::string(MASE_FIXTURES_DIR) + "/search/optuna_study.db", to);
  return to;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("optuna: a study made by Optuna reads back every trial param value and state") {
  TempDir dir;
  const std::string path = fixture_copy(dir);
  Study s = Study::load(path, "from-optuna");
  // The space comes from the trials' distribution_json; the sampler is mase's default.
  REQUIRE(s.space().params().size() == 3);
  CHECK(optuna::same_param(s.space().at("act"), fixture_space().at("act")));
  CHECK(optuna::same_param(s.space().at("layers"), fixture_space().at("layers")));
  CHECK(optuna::same_param(s.space().at("lr"), fixture_space().at("lr")));
  CHECK(s.direction() == Direction::maximize);

  const std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 4);
  struct Want {
    TrialState state;
    const char* act;
    int64_t layers;
    double lr, value;
  };
  const Want want[] = {{TrialState::complete, "gelu", 4, 0.001, 0.75},
                       {TrialState::failed, "relu", 2, 1e-4, 0},
                       {TrialState::complete, "silu", 8, 0.01, 0.8125},
                       {TrialState::running, "relu", 6, 1e-5, 0}};
  for (size_t i = 0; i < 4; ++i) {
    INFO("trial " << i);
    CHECK(t[i].trial.number == static_cast<int64_t>(i));
    CHECK(t[i].trial.state == want[i].state);
    Params p(s.space(), t[i].trial.values);
    CHECK(p.category("act") == want[i].act);  // stored as the index: 1 is gelu
    CHECK(p.integer("layers") == want[i].layers);
    CHECK(p.real("lr") == want[i].lr);
    CHECK(t[i].trial.value == want[i].value);
    CHECK(t[i].started_at.size() == 20);
    CHECK(t[i].ended_at.empty() == (want[i].state == TrialState::running));
  }
  // User attributes: a JSON string reads as its text, a number as its JSON text.
  CHECK(t[0].attrs == std::map<std::string, std::string>{{"note", "first"}, {"size", "1234"}});
  CHECK(t[0].intermediate == std::map<int64_t, double>{{1, 0.5}});
  CHECK(t[1].attrs.empty());
  CHECK(s.best()->trial.number == 2);
}

TEST_CASE("optuna: mase continues an Optuna study where the spaces agree") {
  TempDir dir;
  const std::string path = fixture_copy(dir);
  {
    Study s = Study::open(path, "from-optuna", fixture_space(), Direction::maximize,
                          std::make_unique<RandomSampler>(3), 3);
    CHECK(s.resume() == 0);  // trial 3 is an Optuna worker's (no mase pid): left alone
    s.tell(3, TrialState::complete, 0.5);  // ... but it can be told
    for (int i = 0; i < 3; ++i) {
      std::optional<Trial> t = s.ask();
      REQUIRE(t);
      CHECK(t->number == 4 + i);
      s.report(t->number, 10, 0.25 * i);
      s.tell(t->number, TrialState::complete, 0.1 * i, {{"who", "mase"}});
    }
  }
  // Reopened by load: now a mase study (its sampler and space were recorded).
  Study s = Study::load(path, "from-optuna");
  const std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 7);
  CHECK(t[3].trial.state == TrialState::complete);
  CHECK(t[3].trial.value == 0.5);
  CHECK(t[6].trial.value == doctest::Approx(0.2));
  CHECK(t[6].attrs.at("who") == "mase");
  CHECK(t[6].intermediate == std::map<int64_t, double>{{10, 0.5}});
  CHECK(t[6].pid == getpid());
  CHECK(query_one(path, "SELECT value_json FROM study_system_attributes "
                        "WHERE key = 'mase:sampler'") == "\"random\"");
  // Optuna's own rows for a mase trial: its state name and the distribution Optuna wrote.
  CHECK(query_one(path, "SELECT state FROM trials WHERE number = 6") == "COMPLETE");
  const auto mine = nlohmann::json::parse(query_one(
      path, "SELECT distribution_json FROM trial_params p JOIN trials t USING(trial_id) "
            "WHERE t.number = 6 AND p.param_name = 'layers'"));
  const auto theirs = nlohmann::json::parse(query_one(
      path, "SELECT distribution_json FROM trial_params p JOIN trials t USING(trial_id) "
            "WHERE t.number = 0 AND p.param_name = 'layers'"));
  CHECK(mine == theirs);
}

TEST_CASE("optuna: trials an Optuna script enqueued run first, with their fixed params") {
  TempDir dir;
  const std::string path = dir.file("studies.db");
  std::filesystem::copy_file(std::string(MASE_FIXTURES_DIR) + "/search/optuna_enqueued.db", path);
  Study s = Study::open(path, "queue", fixture_space(), Direction::maximize,
                        std::make_unique<RandomSampler>(5), 5);
  const Params fixed0(s.space(), s.trials().at(0).trial.values);
  CHECK(fixed0.category("act") == "relu");

  const Trial a = *s.ask();  // Optuna's trial 1: act and layers fixed, lr the sampler's
  CHECK(a.number == 1);
  const Params pa(s.space(), a.values);
  CHECK(pa.category("act") == "silu");
  CHECK(pa.integer("layers") == 5);
  CHECK(pa.real("lr") >= 1e-5);
  CHECK(pa.real("lr") <= 1e-2);
  CHECK(query_one(path, "SELECT state FROM trials WHERE number = 1") == "RUNNING");
  CHECK(query_one(path, "SELECT count(*) FROM trial_params p JOIN trials t USING(trial_id) "
                        "WHERE t.number = 1") == "3");
  s.tell(a.number, TrialState::complete, 0.625);

  CHECK_FALSE(s.ask(2).has_value());  // a budget counts what ran, not what waits: 2 are done
  const Trial b = *s.ask(3);          // trial 2, all fixed
  CHECK(b.number == 2);
  const Params pb(s.space(), b.values);
  CHECK(pb.category("act") == "gelu");
  CHECK(pb.integer("layers") == 3);
  CHECK(pb.real("lr") == 0.002);
  s.tell(b.number, TrialState::complete, 0.75);

  // trial 3 fixes act = "tanh", which the space does not have: no worker could run it, so it
  // is failed (saying why) and the ask goes on to the sampler's draw, as trial 4
  const Trial c = *s.ask();
  CHECK(c.number == 4);
  CHECK(query_one(path, "SELECT state FROM trials WHERE number = 3") == "FAIL");
  const TrialRecord refused = s.trials().at(3);
  CHECK(refused.trial.state == TrialState::failed);
  CHECK(contains(refused.attrs.at("error"), "enqueued trial 3 fixes act = \"tanh\""));
  CHECK(s.trials().size() == 5);
}

TEST_CASE("optuna: a space that disagrees with the Optuna study is a ConfigError naming it") {
  TempDir dir;
  const std::string path = fixture_copy(dir);
  const std::string before = bytes_of(path);
  std::string m = error_of<ConfigError>([&] {
    Study::open(path, "from-optuna", fixture_space(6), Direction::maximize,
                std::make_unique<RandomSampler>(3), 3);
  });
  CHECK(contains(m, "[study] study 'from-optuna' in " + path + " was created with parameter "
                    "layers: integer [2, 8] step 1, not layers: integer [2, 6] step 1"));
  Space fewer;
  fewer.categorical("act", {"relu", "gelu", "silu"}).integer("layers", 2, 8);
  m = error_of<ConfigError>([&] {
    Study::open(path, "from-optuna", fewer, Direction::maximize,
                std::make_unique<RandomSampler>(3), 3);
  });
  CHECK(contains(m, "parameter lr: real [1e-05, 0.01] log, which this space lacks"));
  m = error_of<ConfigError>([&] {
    Study::open(path, "from-optuna", fixture_space(), Direction::minimize,
                std::make_unique<RandomSampler>(3), 3);
  });
  CHECK(contains(m, "direction maximize, not minimize"));
  // Nothing was recorded: the study is still the Optuna script's, byte for byte.
  CHECK(bytes_of(path) == before);
  CHECK(query_one(path, "SELECT count(*) FROM study_system_attributes") == "0");
  CHECK(query_one(path, "SELECT count(*) FROM trials") == "4");
}

TEST_CASE("optuna: a file of another Optuna schema revision is refused unchanged") {
  TempDir dir;
  const std::string path = fixture_copy(dir);
  raw_sql(path, "UPDATE alembic_version SET version_num = 'v9.9.9.z'");
  const std::string before = bytes_of(path);
  std::string m = error_of<IoError>([&] {
    Study::open(path, "from-optuna", fixture_space(), Direction::maximize,
                std::make_unique<RandomSampler>(3), 3);
  });
  CHECK(contains(m, "[study] " + path + " expected Optuna's schema revision v3.2.0.a"));
  CHECK(contains(m, "got v9.9.9.z"));
  CHECK(contains(error_of<IoError>([&] { Study::load(path, "from-optuna"); }), "v9.9.9.z"));
  CHECK(bytes_of(path) == before);
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST_CASE("optuna: an empty or damaged study file is an IoError naming it, left unchanged") {
  TempDir dir;
  const std::string empty = dir.file("empty.db"), junk = dir.file("junk.db");
  std::ofstream(empty).close();
  std::ofstream(junk) << "SQLite format 3 but not really, just text";
  CHECK(contains(error_of<IoError>([&] { check_study_file(empty); }),
                 "[study] " + empty + " expected a study file, got an empty file (0 bytes)"));
  CHECK(contains(error_of<IoError>([&] { Study::load(empty, "x"); }), "0 bytes"));
  CHECK(std::filesystem::file_size(empty) == 0);
  const std::string before = bytes_of(junk);
  CHECK(contains(error_of<IoError>([&] { check_study_file(junk); }),
                 "expected a SQLite study file, got a file that is not one"));
  CHECK(contains(error_of<IoError>([&] {
                   Study::open(junk, "x", fixture_space(), Direction::maximize,
                               std::make_unique<RandomSampler>(1), 1);
                 }),
                 junk));
  CHECK(bytes_of(junk) == before);
  // A SQLite file of some other program: named, not touched.
  const std::string other = dir.file("other.db");
  raw_sql(other, "CREATE TABLE songs(title TEXT)");
  CHECK(contains(error_of<IoError>([&] { Study::load(other, "x"); }),
                 "expected an Optuna or mase study file, got a SQLite file with tables songs"));
  CHECK(query_one(other, "SELECT count(*) FROM sqlite_master") == "1");
}

TEST_CASE("optuna: a study file of mase's first schema is migrated when opened") {
  TempDir dir;
  const std::string path = dir.file("old.db");
  // The tables and rows mase wrote before it used Optuna's schema (search/study.h of then).
  raw_sql(path, R"sql(
CREATE TABLE studies(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, direction TEXT NOT NULL,
  sampler TEXT NOT NULL, seed INTEGER NOT NULL, space_json TEXT NOT NULL);
CREATE TABLE trials(id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  number INTEGER NOT NULL, state TEXT NOT NULL, value REAL, started_at TEXT NOT NULL,
  ended_at TEXT, pid INTEGER NOT NULL, host TEXT NOT NULL, UNIQUE(study_id, number));
CREATE TABLE trial_params(trial_id INTEGER NOT NULL REFERENCES trials(id), name TEXT NOT NULL,
  value_text TEXT NOT NULL, PRIMARY KEY(trial_id, name));
CREATE TABLE trial_attrs(trial_id INTEGER NOT NULL REFERENCES trials(id), name TEXT NOT NULL,
  value_text TEXT NOT NULL, PRIMARY KEY(trial_id, name));
INSERT INTO studies VALUES(1, 'old', 'minimize', 'grid', 7, '[
  {"name":"act","kind":"categorical","choices":["relu","gelu"],"low":0.0,"high":0.0,"step":0.0,
   "log":false},
  {"name":"layers","kind":"integer","choices":[],"low":1.0,"high":3.0,"step":1.0,"log":false}]');
INSERT INTO trials VALUES
  (1, 1, 0, 'complete', 0.5, '2026-01-02T03:04:05Z', '2026-01-02T03:05:00Z', 4206649, 'h1'),
  (2, 1, 1, 'failed', NULL, '2026-01-02T03:06:00Z', '2026-01-02T03:07:00Z', 4206649, 'h1'),
  (3, 1, 2, 'running', NULL, '2026-01-02T03:08:00Z', NULL, 4206649, 'h1');
INSERT INTO trial_params VALUES(1, 'act', 'gelu'), (1, 'layers', '3'), (2, 'act', 'relu'),
  (2, 'layers', '1'), (3, 'act', 'relu'), (3, 'layers', '2');
INSERT INTO trial_attrs VALUES(1, 'parameters', '1234'), (2, 'error', 'diverged');
)sql");
  Study s = Study::load(path, "old");
  CHECK(s.direction() == Direction::minimize);
  CHECK(s.space().grid_size() == 6);
  const std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 3);
  CHECK(t[0].trial.state == TrialState::complete);
  CHECK(t[0].trial.value == 0.5);
  CHECK(Params(s.space(), t[0].trial.values).category("act") == "gelu");
  CHECK(Params(s.space(), t[0].trial.values).integer("layers") == 3);
  CHECK(t[0].attrs.at("parameters") == "1234");
  CHECK(t[0].started_at == "2026-01-02T03:04:05Z");
  CHECK(t[0].pid == 4206649);
  CHECK(t[0].host == "h1");
  CHECK(t[1].trial.state == TrialState::failed);
  CHECK(t[1].attrs.at("error") == "diverged");
  CHECK(t[2].trial.state == TrialState::running);
  CHECK(t[2].ended_at.empty());
  CHECK(query_one(path, "SELECT version_num FROM alembic_version") == "v3.2.0.a");
  CHECK(query_one(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'mase_v1%'") == "0");
  CHECK(query_one(path, "SELECT value_json FROM study_system_attributes WHERE key = 'mase:seed'") ==
        "\"7\"");
  // The migrated study goes on: the grid hands out the 4 points not yet complete or running.
  int asked = 0;
  while (auto next = s.ask()) s.tell(next->number, TrialState::complete, 1), ++asked;
  CHECK(asked == 4);
}

TEST_CASE("optuna: an Optuna study whose trials used two ranges for one parameter is refused") {
  TempDir dir;
  const std::string path = fixture_copy(dir);
  raw_sql(path, "UPDATE trial_params SET distribution_json = '{\"name\": \"FloatDistribution\", "
                "\"attributes\": {\"step\": null, \"low\": 1e-06, \"high\": 0.01, \"log\": true}}'"
                " WHERE param_name = 'lr' AND trial_id = 2");
  const std::string m = error_of<ConfigError>([&] { Study::load(path, "from-optuna"); });
  CHECK(contains(m, "[study] parameter 'lr' in " + path + " expected one distribution, got "
                    "trials with two"));
  CHECK(contains(m, "1e-06"));
}
