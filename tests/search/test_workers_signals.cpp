// tests/search/test_workers_signals.cpp — a stop signal sent to the parent of `--workers N`
// alone (`kill PID`, a scheduler's SIGTERM, a hangup) stops its copies as Ctrl-C stops them
// all (search/workers.h): every running trial is recorded failed and retryable, every copy
// exits and is waited for, the parent exits 130, and a resume runs the stopped trials again.
// The search runs in a process of its own (a process group, so a failed case can kill it all):
// lab_runner's trial loop with 2 workers, on an objective that sleeps until it is stopped. The
// oracles: the exit status, each copy's pid (gone), and the study file read back.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/lab_runner.h"
#include "search/trial_queue.h"
#include "search/workers.h"
#include "train/trainer.h"

using namespace mase;
using namespace mase::search;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int kExitInterrupted = 130;  // what the tools return after a stop (mase_search.cpp)

// Sleeps (up to a minute) until the process is told to stop; first drops a file naming its pid.
Objective sleeper(const fs::path& dir) {
  return [dir](const Params&, int64_t number) -> Outcome {
    std::ofstream(dir / cat("running-", number)) << getpid() << "\n";
    for (int i = 0; i < 6000 && !train::stop_requested(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (train::stop_requested()) throw Error("[test] stopped by a signal");
    Outcome o;
    o.value = static_cast<double>(number);
    return o;
  };
}

// The search, as mase-search runs it (tools/mase_search.cpp, search/lab_commands.cpp): stop
// handlers, the fork, the trial loop; a copy ends after its loop, the parent waits for them.
[[noreturn]] void search(const std::string& db, const fs::path& dir) {
  int status = 1;
  try {
    train::clear_stop();
    train::install_stop_handlers();
    Study s = Study::load(db, "sig");
    Workers w(2, s);
    LabRun run;
    run.db = db;
    run.dir = dir.string();
    run.trials = 4;
    run.out = std::fopen("/dev/null", "w");
    run_lab_trials(s, sleeper(dir), run);
    if (w.is_copy()) _exit(train::stop_requested() ? kExitInterrupted : 0);
    w.wait();
    status = train::stop_requested() ? kExitInterrupted : 0;
  } catch (...) {
    status = 1;
  }
  _exit(status);
}

// The pids of the running trials' processes, once `n` trials are running (or after 30 s).
std::set<pid_t> running_pids(const fs::path& dir, size_t n) {
  std::set<pid_t> pids;
  for (int i = 0; i < 3000 && pids.size() < n; ++i) {
    pids.clear();
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename().string().rfind("running-", 0) != 0) continue;
      int pid = 0;
      if (std::ifstream(e.path()) >> pid) pids.insert(pid);
    }
    if (pids.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pids;
}

// Starts a 2-worker search, sends `sig` to its parent (or, `group`, to every process of it, as
// a terminal's Ctrl-C does) once both run a trial, and checks how the search ended.
void stop_search(int sig, bool group) {
  TempDir dir;
  const std::string db = dir.file("sig.db");
  Space space;
  space.integer("x", 0, 99);
  Study::open(db, "sig", space, Direction::maximize, make_sampler("random", 3), 3);  // closed
  std::fflush(nullptr);
  const pid_t parent = fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    setpgid(0, 0);
    search(db, dir.path);
  }
  setpgid(parent, parent);  // either side may come first
  const std::set<pid_t> pids = running_pids(dir.path, 2);
  REQUIRE(pids.size() == 2);
  REQUIRE(pids.count(parent) == 1);
  REQUIRE(::kill(group ? -parent : parent, sig) == 0);

  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 2000 && done == 0; ++i) {  // 20 s: each process stops within 10 ms
    done = waitpid(parent, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {  // still running: everything it started goes, then the case fails
    ::kill(-parent, SIGKILL);
    waitpid(parent, &status, 0);
  }
  REQUIRE_MESSAGE(done == parent, "the parent did not end within 20 s of the signal");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == kExitInterrupted);
  for (pid_t pid : pids) {  // the copy: waited for by its parent, so gone
    errno = 0;
    CHECK(::kill(pid, 0) == -1);
    CHECK(errno == ESRCH);
  }

  Study s = Study::load(db, "sig");
  const std::vector<TrialRecord> trials = s.trials();
  REQUIRE(trials.size() == 2);
  for (const TrialRecord& r : trials) {
    INFO("trial " << r.trial.number);
    CHECK(r.trial.state == TrialState::failed);
    CHECK(r.retryable);
    CHECK(r.attrs.at("error").find("stopped by a signal") != std::string::npos);
  }
  // --resume: nothing is left running to mark, and both trials' parameters run again first
  CHECK(s.resume() == 0);
  CHECK(retries_due(trials).size() == 2);
  std::set<int64_t> again;
  for (int i = 0; i < 2; ++i) {
    std::optional<Trial> t = s.ask(4);
    REQUIRE(t);
    again.insert(t->retry_of);
    CHECK(t->values == trials[static_cast<size_t>(t->retry_of)].trial.values);
  }
  CHECK(again == std::set<int64_t>{0, 1});
}

}  // namespace

TEST_CASE("workers: SIGTERM to the parent alone stops its copies; their trials are retried") {
  stop_search(SIGTERM, false);
}

TEST_CASE("workers: SIGHUP to the parent alone stops its copies as SIGTERM does") {
  stop_search(SIGHUP, false);
}

TEST_CASE("workers: SIGINT to the whole group (Ctrl-C) still stops each copy once, cleanly") {
  // each copy gets the terminal's SIGINT and the parent's forwarded one: counted as one signal,
  // not as the second that quits at once (which would leave its trial running)
  stop_search(SIGINT, true);
}
