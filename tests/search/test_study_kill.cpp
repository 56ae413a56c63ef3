// tests/search/test_study_kill.cpp — a worker killed at random moments loses and duplicates
// nothing: 20 times a forked worker runs the ask/tell loop of a 48-cell grid study (a 1 ms
// objective) and is SIGKILLed after a random 1-20 ms, in the middle of whatever it was doing
// (opening the file, a transaction, the objective); resume then marks its running trial
// failed and the grid hands that cell out again. The oracle is the file read back at the end:
// numbers 0..n-1 each once, every cell complete exactly once, one failed trial at most per kill,
// nothing running, and SQLite's integrity check.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "models/temp_dir.h"
#include "search/study.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;

namespace test_study_kill {

namespace {

Study open_grid(const std::string& path) {
  Space space;
  space.categorical("a", {"p", "q", "r", "s", "t", "u"}).integer("b", 1, 8);  // 48 cells
  return Study::open(path, "kill", space, Direction::maximize, std::make_unique<GridSampler>(9), 9);
}

// Every trial to the end of the grid: what a worker (or the final pass) runs.
void run_grid(Study& s) {
  s.resume();
  while (std::optional<Trial> t = s.ask()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.tell(t->number, TrialState::complete, t->values.at("a") * 10 + t->values.at("b"));
  }
}

}  // namespace

TEST_CASE("study kill: 20 random SIGKILLs of a worker lose and duplicate no trial") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  { open_grid(path); }  // the file exists before the first worker races for it
  std::mt19937 rng(2024);
  int killed_while_running = 0;
  for (int k = 0; k < 20; ++k) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // the worker: its exit status only (doctest's teardown is the parent's)
      int status = 0;
      try {
        Study s = open_grid(path);
        run_grid(s);
      } catch (...) {
        status = 1;
      }
      _exit(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 20));
    kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    // Killed (or, late in the grid, done before the kill came: exit 0); never a failure.
    CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)));
    killed_while_running += WIFSIGNALED(status);
  }
  Study s = open_grid(path);
  run_grid(s);

  const std::vector<TrialRecord> trials = s.trials();
  std::map<std::pair<double, double>, int> complete;
  int failed = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const TrialRecord& r = trials[i];
    INFO("trial " << r.trial.number);
    CHECK(r.trial.number == static_cast<int64_t>(i));  // no gap, no duplicate number
    CHECK(r.trial.state != TrialState::running);
    if (r.trial.state == TrialState::failed) {
      ++failed;
      CHECK(contains(r.attrs.at("error"), "ended before the trial did"));
    } else {
      ++complete[{r.trial.values.at("a"), r.trial.values.at("b")}];
      CHECK(r.trial.value == r.trial.values.at("a") * 10 + r.trial.values.at("b"));
    }
  }
  CHECK(complete.size() == 48);
  for (const auto& [cell, n] : complete) CHECK(n == 1);
  CHECK(failed <= killed_while_running);
  MESSAGE(killed_while_running << " workers killed, " << failed << " trials failed by it, "
                               << trials.size() << " trials in all");
  CHECK(query_one(path, "PRAGMA integrity_check") == "ok");
}

}  // namespace test_study_kill
