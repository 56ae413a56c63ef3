// tests/search/test_study_postgres.cpp — studies in PostgreSQL (search/postgres_store.cpp), run
// when MASE_TEST_PG_URL names a server (scripts/test.sh starts one: scripts/pg_server.sh) and
// skipped visibly otherwise. Each case works in a schema of its own (created and dropped here,
// reached through libpq's ?options=-csearch_path), so cases may run in parallel. The oracle is
// what the storage reads back: every trial exactly once, values bit-exact, states as expected.
// 4 worker processes share a grid and a budget; a worker SIGKILLed 20 times loses and
// duplicates nothing; a dead worker on "another machine" is found by its stale heartbeat; and
// bad input (no server, a wrong password, another Optuna schema, a space that disagrees) is
// one IoError / ConfigError line that leaves the rows as they were.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "helpers.h"
#include "runtime/error.h"
#include "search/heartbeat.h"
#include "search/pruner.h"
#include "search/study_store.h"
#include "search/study_test_util.h"
#include "search/workers.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;

namespace test_study_postgres {

namespace {

// A schema of its own on the test server, dropped at the end; url() reaches it.
class PgSchema {
 public:
  PgSchema() {
    const char* base = std::getenv("MASE_TEST_PG_URL");
    if (!base || !*base) return;
    base_ = base;
    static int counter = 0;
    name_ = cat("mase_test_", getpid(), "_", counter++);
    admin_ = store::connect(base_);
    admin_->exec(cat("DROP SCHEMA IF EXISTS ", name_, " CASCADE; CREATE SCHEMA ", name_),
                 "create test schema");
  }
  ~PgSchema() {
    if (admin_) {
      try {
        admin_->exec(cat("DROP SCHEMA IF EXISTS ", name_, " CASCADE"), "drop test schema");
      } catch (...) {
      }
    }
  }
  // false (and the case skipped) when no server was given
  bool available() const {
    if (admin_) return true;
    test::skip("no PostgreSQL server: set MASE_TEST_PG_URL=postgresql://user:pw@host:port/db "
               "(scripts/test.sh starts one with scripts/pg_server.sh)");
    return false;
  }
  std::string url() const {
    return cat(base_, base_.find('?') == std::string::npos ? "?" : "&",
               "options=-csearch_path%3D", name_);
  }
  // A statement on the schema from outside the study code (as another tool or a crash would).
  void sql(const std::string& text) {
    admin_->exec(cat("SET search_path TO ", name_, "; ", text, "; SET search_path TO DEFAULT"),
                 "test statement");
  }
  std::string query_one(const std::string& text) {
    admin_->exec(cat("SET search_path TO ", name_), "test search path");
    store::Statement q(*admin_, text.c_str(), "test query");
    std::string out = q.step() ? q.text(0) : "";
    admin_->exec("SET search_path TO DEFAULT", "test search path");
    return out;
  }

 private:
  std::string base_, name_;
  std::unique_ptr<store::Database> admin_;
};

Space grid_space() {
  Space space;
  space.categorical("a", {"p", "q", "r", "s", "t", "u"}).integer("b", 1, 8);  // 48 cells
  return space;
}

Study open_grid(const std::string& url) {
  return Study::open(url, "grid", grid_space(), Direction::maximize,
                     std::make_unique<GridSampler>(9), 9);
}

double cell_value(const Trial& t) { return t.values.at("a") * 10 + t.values.at("b"); }

// Every trial to the end of the grid (or the budget): what each worker runs.
void run_grid(Study& s, std::optional<int64_t> budget = std::nullopt) {
  while (std::optional<Trial> t = s.ask(budget)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s.tell(t->number, TrialState::complete, cell_value(*t));
  }
}

// Numbers 0..n-1 once each, nothing running, every complete cell once with its value.
std::map<std::pair<double, double>, int> check_history(const std::vector<TrialRecord>& trials) {
  std::map<std::pair<double, double>, int> complete;
  for (size_t i = 0; i < trials.size(); ++i) {
    const TrialRecord& r = trials[i];
    INFO("trial " << r.trial.number);
    CHECK(r.trial.number == static_cast<int64_t>(i));
    CHECK(r.trial.state != TrialState::running);
    if (r.trial.state == TrialState::complete) {
      ++complete[{r.trial.values.at("a"), r.trial.values.at("b")}];
      CHECK(r.trial.value == cell_value(r.trial));
    }
  }
  for (const auto& [cell, n] : complete) CHECK(n == 1);
  return complete;
}

}  // namespace

TEST_CASE("postgres: trials values states and attributes read back the same") {
  PgSchema pg;
  if (!pg.available()) return;
  Space space;
  space.real("lr", 1e-5, 1e-2, true).categorical("act", {"relu", "gelu"}).integer("n", 2, 8, 2);
  Study s = Study::open(pg.url(), "rt", space, Direction::minimize,
                        std::make_unique<RandomSampler>(3), 3);
  std::vector<Trial> asked;
  for (int i = 0; i < 4; ++i) asked.push_back(*s.ask());
  s.report(asked[0].number, 10, 0.625);
  s.report(asked[0].number, 10, 0.5);  // a second report of a step replaces the first
  s.tell(asked[0].number, TrialState::complete, 0.1 + 0.2, {{"note", "it's \"quoted\""}});
  s.tell(asked[1].number, TrialState::pruned, 7.5);
  s.tell(asked[2].number, TrialState::failed, 0, {{"error", "boom"}});
  s.tell(asked[3].number, TrialState::complete, -INFINITY);

  Study again = Study::load(pg.url(), "rt");  // a second connection, the stored space
  CHECK(again.direction() == Direction::minimize);
  const std::vector<TrialRecord> t = again.trials();
  REQUIRE(t.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(t[i].trial.values == asked[i].values);  // bit-exact doubles
  CHECK(t[0].trial.value == 0.1 + 0.2);
  CHECK(t[0].attrs.at("note") == "it's \"quoted\"");
  CHECK(t[0].intermediate == std::map<int64_t, double>{{10, 0.5}});
  CHECK(t[1].trial.state == TrialState::pruned);
  CHECK(t[2].trial.state == TrialState::failed);
  CHECK(t[2].attrs.at("error") == "boom");
  CHECK(t[3].trial.value == -INFINITY);
  CHECK(t[0].pid == getpid());
  CHECK(t[0].host == this_host());
  CHECK(t[0].started_at.size() == 20);  // 2026-11-25T03:21:53Z
  CHECK(again.best()->trial.number == asked[3].number);  // minimize: -inf is best
  // Optuna's rows: the state is the native enum, the version rows are Optuna 5's.
  CHECK(pg.query_one("SELECT version_num FROM alembic_version") == "v3.2.0.a");
  CHECK(pg.query_one("SELECT count(*) FROM trials WHERE state = 'COMPLETE'") == "2");
  CHECK(pg.query_one("SELECT value_type FROM trial_values WHERE value IS NULL") == "INF_NEG");
}

TEST_CASE("postgres: successive halving's rungs and constraints go through the server") {
  // the system attributes a pruner of another worker and Optuna read (search/halving.h,
  // Study::set_constraint): written on the server, read back by a second connection
  PgSchema pg;
  if (!pg.available()) return;
  Space space;
  space.integer("x", 0, 9);
  Study s = Study::open(pg.url(), "halving", space, Direction::maximize,
                        std::make_unique<RandomSampler>(3), 3);
  const Pruning pruning(s, SuccessiveHalvingPruner{.min_resource = 1, .reduction_factor = 2});
  auto a = s.ask();
  pruning.report(a->number, 1, 0.5);  // alone: rung 0 passed
  pruning.report(a->number, 2, 0.6);  // rung 1 passed
  Outcome done;
  done.value = 0.6;
  done.constraints = {{"params", -10.0}};
  s.tell(a->number, done);
  auto b = s.ask();
  CHECK_THROWS_AS(pruning.report(b->number, 1, 0.25), TrialPruned);  // below 0.5 at rung 0
  s.set_constraint(b->number, "params", 2.5);
  s.tell(b->number, TrialState::pruned, 0.25);
  const std::vector<TrialRecord> t = Study::load(pg.url(), "halving").trials();
  REQUIRE(t.size() == 2);
  CHECK(t[0].rungs == std::map<int, double>{{0, 0.5}, {1, 0.6}});
  CHECK(t[1].rungs == std::map<int, double>{{0, 0.25}});
  CHECK(t[0].trial.constraints == std::map<std::string, double>{{"params", -10.0}});
  CHECK(t[1].trial.constraints == std::map<std::string, double>{{"params", 2.5}});
  CHECK(pg.query_one("SELECT value_json FROM trial_system_attributes WHERE key = "
                     "'completed_rung_1'") == "0.6");
}

TEST_CASE("postgres: an interrupted trial's parameters run again, with Optuna's retry attributes") {
  PgSchema pg;
  if (!pg.available()) return;
  Space space;
  space.integer("x", 0, 999999);
  Study s = Study::open(pg.url(), "retry", space, Direction::maximize,
                        std::make_unique<RandomSampler>(3), 3);
  const Trial a = *s.ask();
  s.interrupted(a.number, "stopped by Ctrl-C");
  const Trial b = *Study::load(pg.url(), "retry").ask();  // another connection retries it
  CHECK(b.retry_of == a.number);
  CHECK(b.values == a.values);
  CHECK(pg.query_one("SELECT a.value_json FROM trial_system_attributes a JOIN trials t ON "
                     "t.trial_id = a.trial_id WHERE t.number = 1 AND a.key = 'retry_history'") ==
        "[0]");
  CHECK(s.ask()->retry_of == -1);  // once
  // a trial an Optuna script enqueued (WAITING, fixed_params: Optuna's rows) runs next
  pg.sql("INSERT INTO trials(number, study_id, state) SELECT 3, study_id, 'WAITING' FROM studies");
  pg.sql("INSERT INTO trial_system_attributes(trial_id, key, value_json) SELECT trial_id, "
         "'fixed_params', '{\"x\": 4242}' FROM trials WHERE number = 3");
  const Trial queued = *s.ask();
  CHECK(queued.number == 3);
  CHECK(queued.values.at("x") == 4242);
  CHECK(pg.query_one("SELECT state FROM trials WHERE number = 3") == "RUNNING");
  // one the space cannot run (x out of range) is failed, saying why, and the ask goes on
  pg.sql("INSERT INTO trials(number, study_id, state) SELECT 4, study_id, 'WAITING' FROM studies");
  pg.sql("INSERT INTO trial_system_attributes(trial_id, key, value_json) SELECT trial_id, "
         "'fixed_params', '{\"x\": -1}' FROM trials WHERE number = 4");
  CHECK(s.ask()->number == 5);
  CHECK(pg.query_one("SELECT state FROM trials WHERE number = 4") == "FAIL");
  CHECK(pg.query_one("SELECT count(*) FROM trials WHERE number = 4 AND datetime_start IS NOT "
                     "NULL AND datetime_complete IS NOT NULL") == "1");
  CHECK(s.trials().at(4).attrs.at("error").find("fixes x = -1") != std::string::npos);
}

TEST_CASE("postgres: 4 worker processes on a grid study evaluate every cell exactly once") {
  PgSchema pg;
  if (!pg.available()) return;
  Study s = open_grid(pg.url());
  Workers w(4, s);
  int status = 0;
  try {
    run_grid(s);
  } catch (...) {
    status = 1;
  }
  if (w.is_copy()) _exit(status);
  REQUIRE(status == 0);
  CHECK(w.wait() == 0);
  const std::vector<TrialRecord> trials = s.trials();
  CHECK(trials.size() == 48);
  CHECK(check_history(trials).size() == 48);
  std::map<int64_t, int> per_pid;
  for (const TrialRecord& r : trials) ++per_pid[r.pid];
  MESSAGE(per_pid.size() << " processes took trials");
  CHECK(per_pid.size() >= 2);  // the copies really worked, not only the parent
}

TEST_CASE("postgres: a budget is exact with 4 concurrent worker processes reading the trials") {
  PgSchema pg;
  if (!pg.available()) return;
  Space space;
  space.integer("x", 0, 1000);
  Study s = Study::open(pg.url(), "budget", space, Direction::maximize,
                        std::make_unique<RandomSampler>(4), 4);
  Workers w(4, s);
  int status = 0;
  try {
    while (std::optional<Trial> t = s.ask(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s.tell(t->number, TrialState::complete, t->values.at("x"));
      // as mase-search's loop does: reading every trial while the others insert theirs (the
      // trials and their params are read by separate statements: a trial inserted between
      // them must not break the read)
      for (int i = 0; i < 5; ++i) s.trials();
    }
  } catch (...) {
    status = 1;
  }
  if (w.is_copy()) _exit(status);
  REQUIRE(status == 0);
  CHECK(w.wait() == 0);
  CHECK(s.trials().size() == 10);
}

TEST_CASE("postgres: 20 random SIGKILLs of a worker lose and duplicate no trial") {
  PgSchema pg;
  if (!pg.available()) return;
  const std::string url = pg.url();
  { open_grid(url); }
  std::mt19937 rng(2024);
  int killed = 0;
  for (int k = 0; k < 20; ++k) {
    const std::string before = pg.query_one("SELECT count(*) FROM trials");
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int status = 0;
      try {
        Study s = open_grid(url);
        s.resume();
        run_grid(s);
      } catch (...) {
        status = 1;
      }
      _exit(status);
    }
    // Connecting takes longer than opening a file, and varies with the load: wait until the
    // worker has asked for a trial, then kill it 0-9 ms later, in whatever it is doing.
    for (int i = 0; i < 500 && pg.query_one("SELECT count(*) FROM trials") == before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 10));
    kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
    killed += WIFSIGNALED(status);
  }
  Study s = open_grid(url);
  s.resume();
  run_grid(s);
  const std::vector<TrialRecord> trials = s.trials();
  CHECK(check_history(trials).size() == 48);
  int failed = 0;
  for (const TrialRecord& r : trials) failed += r.trial.state == TrialState::failed;
  CHECK(failed <= killed);
  CHECK(failed >= 1);  // some kills landed inside a trial, and resume failed and retried it
  MESSAGE(killed << " workers killed, " << failed << " trials failed by it, " << trials.size()
                 << " trials in all");
}

TEST_CASE("postgres: a dead worker on another machine is found by its stale heartbeat") {
  PgSchema pg;
  if (!pg.available()) return;
  const std::string url = pg.url();
  { open_grid(url); }
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // takes one cell, beats every 50 ms, and never finishes
    try {
      Study s = open_grid(url);
      std::optional<Trial> t = s.ask();
      Heartbeat beat(s, t->number, 0.05);
      pause();
    } catch (...) {
    }
    _exit(1);
  }
  Study s = open_grid(url);
  for (int i = 0; i < 200 && pg.query_one("SELECT count(*) FROM trial_heartbeats") != "1"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(pg.query_one("SELECT count(*) FROM trial_heartbeats") == "1");
  // "Another machine": the pid rule cannot judge it, only the heartbeat can.
  pg.sql("UPDATE trial_system_attributes SET value_json = '\"elsewhere\"' WHERE key = 'mase:host'");
  CHECK(s.resume(1.0) == 0);  // alive: beating
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  CHECK(s.resume(1.0) == 1);  // its beat is now older than 1 s
  std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 1);
  CHECK(t[0].trial.state == TrialState::failed);
  CHECK(contains(t[0].attrs.at("error"), "no heartbeat since"));
  run_grid(s);  // the dead worker's cell is handed out again
  CHECK(check_history(s.trials()).size() == 48);
}

TEST_CASE("postgres: no server or a wrong password is one IoError line") {
  PgSchema pg;
  if (!pg.available()) return;
  const std::string none = "postgresql://mase:pw@127.0.0.1:1/mase_test";
  std::string e = error_of<IoError>([&] { open_grid(none); });
  CHECK(contains(e, "[study] connect to postgresql://mase:***@127.0.0.1:1/mase_test: "));
  CHECK(contains(e, "is the server running"));
  CHECK(e.find('\n') == std::string::npos);
  CHECK(!contains(e, ":pw@"));  // the password is never printed

  std::string url = pg.url();
  const size_t colon = url.find(':', url.find("://") + 3), at = url.find('@');
  REQUIRE(colon < at);
  const std::string wrong = url.substr(0, colon + 1) + "not-the-password" + url.substr(at);
  e = error_of<IoError>([&] { open_grid(wrong); });
  CHECK(contains(e, "password authentication failed"));
  CHECK(contains(e, "check the user and password in the URL"));
  CHECK(!contains(e, "not-the-password"));
  CHECK(e.find('\n') == std::string::npos);
  CHECK(pg.query_one("SELECT count(*) FROM information_schema.tables "
                     "WHERE table_schema = current_schema()") == "0");  // nothing was created
}

TEST_CASE("postgres: another Optuna schema revision or a disagreeing space is refused unchanged") {
  PgSchema pg;
  if (!pg.available()) return;
  {
    Study s = open_grid(pg.url());
    s.tell(s.ask()->number, TrialState::complete, 1);
  }
  // a worker whose space disagrees: ConfigError naming it, no trial added
  Space other;
  other.categorical("a", {"p", "q"}).integer("b", 1, 8);
  std::string e = error_of<ConfigError>([&] {
    Study::open(pg.url(), "grid", other, Direction::maximize, std::make_unique<GridSampler>(9), 9);
  });
  CHECK(contains(e, "[study] study 'grid' in postgresql://"));
  CHECK(contains(e, "was created with"));
  CHECK(pg.query_one("SELECT count(*) FROM trials") == "1");

  pg.sql("UPDATE alembic_version SET version_num = 'v9.9.9'");
  e = error_of<IoError>([&] { open_grid(pg.url()); });
  CHECK(contains(e, "expected Optuna's schema revision v3.2.0.a (Optuna 3.2 to 5.0), got v9.9.9"));
  CHECK(contains(e, "optuna storage upgrade --storage postgresql://"));
  CHECK(pg.query_one("SELECT version_num FROM alembic_version") == "v9.9.9");
  CHECK(pg.query_one("SELECT count(*) FROM trials") == "1");
}

TEST_CASE("postgres: a storage of another scheme is a ConfigError naming the two mase speaks") {
  // (no server needed)
  std::string e = error_of<ConfigError>([] { store::connect("mysql://u:secret@h/db"); });
  CHECK(e == "[study] expected a storage sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB,"
             " got mysql://u:***@h/db (mase keeps studies in SQLite or PostgreSQL)");
  CHECK(store::redact("postgresql://u:p@h:5432/d?x=1") == "postgresql://u:***@h:5432/d?x=1");
  CHECK(store::redact("postgresql://u@h/d") == "postgresql://u@h/d");
  CHECK(store::redact("runs/studies.db") == "runs/studies.db");
}

}  // namespace test_study_postgres
