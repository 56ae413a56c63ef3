// tests/search/test_workers.cpp — several processes on one study (search/workers.h), as
// `mase-search --workers N` runs them: a 4-worker grid study evaluates every cell exactly once,
// and a budget (--trials) is exact however many workers share it, failed trials retried. The
// objectives are cheap (a few ms of sleep, so that the workers overlap), not training. The
// oracle is the study file read back afterwards: every trial, its point, state and pid.
#include <doctest/doctest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
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
