// tests/search/test_workers.cpp — several processes on one study (search/workers.h), as
// `mase-search --workers N` runs them: a 4-worker grid study evaluates every cell exactly once,
// and a budget (--trials) is exact however many workers share it, failed trials retried. The
// objectives are cheap (a few ms of sleep, so that the workers overlap), not training. The
// oracle is the study file read back afterwards: every trial, its point, state and pid; the
// report of how busy the workers were (search/worker_usage.h), by hand on made-up times.
#include <doctest/doctest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/study_store.h"
#include "search/worker_usage.h"
#include "search/workers.h"

using namespace mase;
using namespace mase::search;
using test::TempDir;

namespace {

// The loop every worker runs (mase-search's, without the printing): ask within the budget,
// evaluate, tell; an exception from the objective fails that trial only. In a copy the process
// ends here, reporting through its exit status (doctest's teardown runs once, in the parent).
void work(Workers& w, Study& s, std::optional<int64_t> budget,
          const std::function<double(const Trial&)>& f) {
  int status = 0;
  try {
    while (std::optional<Trial> t = s.ask(budget)) {
      try {
        s.tell(t->number, TrialState::complete, f(*t));
      } catch (const std::runtime_error& e) {
        s.tell(t->number, TrialState::failed, 0, {{"error", e.what()}});
      }
    }
  } catch (...) {
    status = 1;
  }
  if (w.is_copy()) _exit(status);
  REQUIRE(status == 0);
}

void nap() { std::this_thread::sleep_for(std::chrono::milliseconds(8)); }

}  // namespace

TEST_CASE("workers: a 4-worker grid study evaluates every cell exactly once") {
  TempDir dir;
  Space space;
  space.categorical("a", {"p", "q", "r", "s"}).integer("b", 0, 5);  // 24 cells
  Study s = Study::open(dir.file("grid.db"), "grid", space, Direction::maximize,
                        make_sampler("grid", 5), 5);
  Workers w(4, s);
  work(w, s, std::nullopt, [](const Trial& t) {
    nap();
    return t.values.at("b");
  });
  CHECK(w.wait() == 0);

  const std::vector<TrialRecord> trials = s.trials();
  REQUIRE(trials.size() == 24);
  std::set<std::pair<double, double>> cells;
  std::map<int64_t, int> per_pid;
  for (const TrialRecord& r : trials) {
    CHECK(r.trial.state == TrialState::complete);
    cells.emplace(r.trial.values.at("a"), r.trial.values.at("b"));
    ++per_pid[r.pid];
  }
  CHECK(cells.size() == 24);  // no cell twice, none missing
  MESSAGE(per_pid.size() << " processes took part");
  CHECK(per_pid.size() >= 2);
  // the run's report (mase-search's "workers" line) finds every trial and its process
  REQUIRE(w.pids().size() == 4);
  const WorkerUsage u = worker_usage(trials, store::host_name(), w.pids(), w.started_s(),
                                     wall_clock_s());
  CHECK(u.trials == 24);
  CHECK(u.processes == static_cast<int>(per_pid.size()));
  CHECK(u.busy_s >= 24 * 0.008);  // each trial naps 8 ms
  CHECK(u.busy_s <= 4 * u.wall_s);
  CHECK_FALSE(s.ask());  // the grid is done
}

TEST_CASE("workers: --trials is exact with concurrent workers, failed trials retried") {
  // Before Study::ask(budget), each worker checked "fewer than 6 finished?" and then asked:
  // two workers that both saw 5 finished ran 7 trials. Now the budget is counted under the
  // write lock, running trials included: exactly 6 complete, plus the one failure (trial 2
  // throws), which does not count and is asked for again. TPE (with the liar) and 3 workers.
  TempDir dir;
  Space space;
  space.real("x", 0, 1).integer("n", 0, 9);
  Study s = Study::open(dir.file("budget.db"), "budget", space, Direction::maximize,
                        make_sampler("tpe", 2), 2);
  Workers w(3, s);
  work(w, s, 6, [](const Trial& t) {
    nap();
    if (t.number == 2) throw std::runtime_error("trial 2 fails");
    return t.values.at("x");
  });
  CHECK(w.wait() == 0);
  std::map<TrialState, int> states;
  for (const TrialRecord& r : s.trials()) ++states[r.trial.state];
  CHECK(states[TrialState::complete] == 6);
  CHECK(states[TrialState::failed] == 1);
  CHECK(states[TrialState::running] == 0);
  CHECK(s.trials().size() == 7);
  CHECK_FALSE(s.ask(6));  // the budget is spent
  CHECK(s.ask(7));        // a larger one is not
}

TEST_CASE("workers: one worker forks nothing; fewer than one is a ConfigError") {
  TempDir dir;
  Space space;
  space.integer("n", 0, 3);
  Study s = Study::open(dir.file("one.db"), "one", space, Direction::maximize,
                        make_sampler("random", 1), 1);
  const std::string path = s.storage();
  {
    Workers w(1, s);
    CHECK_FALSE(w.is_copy());
    CHECK(w.wait() == 0);
  }
  CHECK(s.storage() == path);  // the same connection, still open
  CHECK(s.ask(1));
  CHECK_FALSE(s.ask(1));
  CHECK_THROWS_AS(Workers(0, s), ConfigError);
}

// The bug `mase-search --workers 2` had: a worker's heartbeat thread loads the study
// (Study::load), which checked the file's header with std::ifstream — a plain open() and
// close() in a process whose own connection holds a SHARED lock on the file. POSIX drops all
// of a process's locks on a file when any of its descriptors to it closes; the other worker,
// closing a connection, then got EXCLUSIVE, took itself for the last connection and deleted
// the WAL: from then on the two processes wrote to different WALs, and one's trials were lost.
TEST_CASE("workers: checking a study file keeps this process's locks (another process's close "
          "cannot delete the WAL under it)") {
  TempDir dir;
  const std::string path = dir.file("locks.db");
  // The other worker is forked first, while no connection is open (none may cross a fork),
  // and waits on a pipe until this process has its connection and has checked the file.
  int go[2];
  REQUIRE(pipe(go) == 0);
  const pid_t pid = fork();
  if (pid == 0) {  // the other worker: opens the study, reads it, closes it again
    close(go[1]);
    char c = 0;
    int status = read(go[0], &c, 1) == 1 ? 0 : 3;
    try {
      Study other = Study::load(path, "locks");
      if (!other.trials().empty()) status = 1;
    } catch (...) {
      status = 2;
    }
    _exit(status);
  }
  close(go[0]);
  Space space;
  space.integer("n", 0, 9);
  Study s = Study::open(path, "locks", space, Direction::maximize, make_sampler("random", 1), 1);
  CHECK(s.trials().empty());  // this connection has read the file: it holds its SHARED lock
  check_study_file(path);     // what Study::load does first, as the heartbeat thread calls it
  REQUIRE(write(go[1], "x", 1) == 1);
  close(go[1]);
  int status = -1;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(std::filesystem::exists(path + "-wal"));  // still ours
  std::optional<Trial> t = s.ask(1);
  REQUIRE(t);
  s.tell(t->number, TrialState::complete, 1.0);
  CHECK(Study::load(path, "locks").trials().size() == 1);  // a new connection sees our trial
}

namespace {
std::string g_remove_at_fork;  // a file removed as the next fork begins (then forgotten)
}  // namespace

TEST_CASE("workers: a study that cannot be opened again after the fork: the parent waits for "
          "its copy before the error leaves the constructor") {
  // The study file is removed as the process forks, so Study::load fails in both processes:
  // the copy reports its pid and exits; the parent's IoError leaves Workers' constructor, whose
  // destructor never runs — the copy must have been waited for before that (as the destructor
  // does for an exception in the trial loop), or it would be left unwaited. The oracle: the
  // copy's pid is no child of this process any more (waitpid: ECHILD) once the error is caught.
  TempDir dir;
  const std::string db = dir.file("gone.db"), pid_file = dir.file("copy.pid");
  Space space;
  space.integer("x", 0, 3);
  Study s = Study::open(db, "gone", space, Direction::maximize, make_sampler("random", 1), 1);
  static bool registered = false;
  if (!registered)
    pthread_atfork([] {
      if (!g_remove_at_fork.empty()) std::remove(g_remove_at_fork.c_str());
      g_remove_at_fork.clear();
    }, nullptr, nullptr);
  registered = true;
  g_remove_at_fork = db;
  const pid_t parent = getpid();
  bool threw = false;
  try {
    Workers w(2, s);
  } catch (const std::exception&) {
    if (getpid() != parent) {  // the copy
      std::FILE* f = std::fopen(pid_file.c_str(), "w");
      if (f) std::fprintf(f, "%d", static_cast<int>(getpid())), std::fclose(f);
      _exit(0);
    }
    threw = true;
  }
  CHECK(threw);
  int copy = 0;
  for (int i = 0; i < 400 && !copy; ++i) {  // the copy writes it (at once if it was waited for)
    if (std::FILE* f = std::fopen(pid_file.c_str(), "r")) {
      if (std::fscanf(f, "%d", &copy) != 1) copy = 0;
      std::fclose(f);
    }
    if (!copy) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(copy > 0);
  errno = 0;
  const pid_t reaped = waitpid(copy, nullptr, WNOHANG);
  CHECK(reaped == -1);
  CHECK(errno == ECHILD);
  if (reaped != -1) waitpid(copy, nullptr, 0);  // not waited for: do it now
}

TEST_CASE("worker_usage: busy and idle time by hand; other processes, running trials left out") {
  // Three workers (pids 10, 11, 12 on host h) from t = 100 to 120 s: 10 ran [101, 105] and
  // [105.5, 110], 11 ran [100.5, 118], 12 ran nothing. Left out: pid 99 (another worker of the
  // study), pid 10 on another host, a trial still running, one that started before the run.
  auto trial = [](int64_t pid, const char* host, double start, double end) {
    TrialRecord r;
    r.pid = pid;
    r.host = host;
    r.start_s = start;
    r.end_s = end;
    return r;
  };
  const std::vector<TrialRecord> trials = {
      trial(10, "h", 101, 105),   trial(10, "h", 105.5, 110), trial(11, "h", 100.5, 118),
      trial(99, "h", 101, 102),   trial(10, "g", 101, 103),   trial(11, "h", 118.5, NAN),
      trial(12, "h", 99, 101)};
  const std::vector<int64_t> pids = {10, 11, 12};
  const WorkerUsage u = worker_usage(trials, "h", pids, 100, 120);
  CHECK(u.workers == 3);
  CHECK(u.trials == 3);
  CHECK(u.processes == 2);
  CHECK(u.wall_s == 20);
  CHECK(u.busy_s == doctest::Approx(4 + 4.5 + 17.5));
  CHECK(u.busy_fraction() == doctest::Approx(26.0 / 60));
  CHECK(u.idle_start_s == doctest::Approx(1 + 0.5 + 20));  // 12 idle the whole run
  CHECK(u.idle_end_s == doctest::Approx(10 + 2));
  CHECK(u.idle_between_s == doctest::Approx(0.5));  // 10's gap between its two trials
  CHECK(describe(u) ==
        "3 processes ran 3 trials in 20.0 s: busy 43% of 3 × 20.0 s (26.0 s of trials); "
        "idle 34.0 s: 21.5 starting, 12.0 at the end, 0.5 between trials");
  CHECK_THROWS_AS(worker_usage(trials, "h", {}, 100, 120), ConfigError);
}

TEST_CASE("epoch_seconds: the storage's times to the microsecond, NaN for anything else") {
  CHECK(optuna::epoch_seconds("1970-01-01 00:00:01.5") == 1.5);
  CHECK(optuna::epoch_seconds("2026-11-25T03:21:53Z") == 1795576913.0);  // calendar.timegm
  CHECK(optuna::epoch_seconds("2026-11-25 03:21:53.632759") ==
        doctest::Approx(1795576913.632759).epsilon(1e-15));
  CHECK(std::abs(optuna::epoch_seconds(optuna::time_now()) - wall_clock_s()) < 1.0);  // one clock
  CHECK(std::isnan(optuna::epoch_seconds("")));
  CHECK(std::isnan(optuna::epoch_seconds("yesterday")));
  CHECK(std::isnan(optuna::epoch_seconds("2026-11-25/03:21:53")));
}
