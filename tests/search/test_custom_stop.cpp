// tests/search/test_custom_stop.cpp — `mase-search custom`'s command when the search stops
// (search/shell_command.h): it runs in a process group of its own, gets SIGTERM (SIGKILL after
// the grace if it ignores that), and its trial is recorded as interrupted. Oracles: the
// command's own pid (its group's id) written to a file, then probed with kill(-group, 0); the
// clock (a 30 s sleep that ends in well under the grace was signalled); the study read back.
// The "custom stop:" cases spawn processes and signal them from a second thread: left out
// under qemu-user (scripts/avx2_emu.sh).
#include <doctest/doctest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/lab_commands.h"
#include "search/shell_command.h"
#include "search/study.h"
#include "search/study_test_util.h"
#include "train/trainer.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Asks for a stop (as the signal handler does) once `file` exists (the command has started),
// or after 20 s; then, once joined, the flag is cleared for the next case.
struct StopWhenStarted {
  std::thread thread;
  explicit StopWhenStarted(const std::string& file) {
    thread = std::thread([file] {
      for (int i = 0; i < 400 && !fs::exists(file); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its sleep has started
      train::request_stop();
    });
  }
  ~StopWhenStarted() {
    thread.join();
    train::clear_stop();
  }
};

// Whether any process of group `group` is still running: /proc/<pid>/stat holds
// "pid (comm) state ppid pgrp ..."; a zombie (state Z: dead, waiting to be reaped) does not count.
bool group_running(pid_t group) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;  // not a process, or it has just gone
    const size_t close = stat.rfind(')');  // comm may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    pid_t ppid = 0, pgrp = 0;
    if ((rest >> state >> ppid >> pgrp) && pgrp == group && state != 'Z' && state != 'X')
      return true;
  }
  return false;
}

// The group the command recorded ($$ of sh -c, which posix_spawn made a group leader) has no
// process left running. Its dead members are zombies until their new parent, PID 1, reaps them,
// and how soon it does is the machine's init's business (on a loaded CI machine it took > 2 s,
// so kill(-group, 0) still found them): they are not what the stop must end.
bool group_gone(const std::string& pid_file) {
  std::ifstream in(pid_file);
  pid_t group = 0;
  in >> group;
  REQUIRE(group > 1);
  for (int i = 0; i < 250; ++i) {
    if (!group_running(group)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST_CASE("shell command: the last non-blank stdout line, the exit status, stdin empty") {
  ShellRun r = run_shell("echo first; echo '  '; echo to-stderr >&2; printf 'last'");
  CHECK(r.last_line == "last");
  CHECK(r.status == 0);
  CHECK_FALSE(r.stopped);
  r = run_shell("cat; echo 'read nothing'; exit 3");  // stdin is /dev/null: cat ends at once
  CHECK(r.last_line == "read nothing");
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 3);
}

TEST_CASE("custom stop: a stop sends the command's whole group SIGTERM, even from a thread that blocks it") {
  TempDir dir;
  const std::string pid_file = dir.file("pid");
  // the calling thread blocks the stop signals, as install_stop_handlers leaves mase's threads:
  // the command must not inherit that mask (its sleep would then only die of SIGKILL)
  sigset_t stop, before;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, &before);
  const auto t0 = Clock::now();
  ShellRun r;
  {
    StopWhenStarted stopper(pid_file);
    r = run_shell("echo $$ > " + pid_file + "; sleep 30; echo 1", 20);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  CHECK(r.stopped);
  CHECK_FALSE(r.killed);          // SIGTERM was enough: the grace of 20 s never ran out
  CHECK(seconds_since(t0) < 15);  // not the 30 s sleep: it was signalled too
  CHECK(r.last_line.empty());     // "1" never printed
  CHECK(group_gone(pid_file));
}

TEST_CASE("custom stop: a command that ignores SIGTERM gets SIGKILL after the grace") {
  TempDir dir;
  const std::string pid_file = dir.file("pid");
  const auto t0 = Clock::now();
  ShellRun r;
  {
    StopWhenStarted stopper(pid_file);
    r = run_shell("trap '' TERM; echo $$ > " + pid_file + "; sleep 30; echo 1", 0.5);
  }
  CHECK(r.stopped);
  CHECK(r.killed);
  CHECK(seconds_since(t0) < 15);
  CHECK(group_gone(pid_file));
}

TEST_CASE("custom stop: a stopped search records the command's trial as interrupted, not complete") {
  TempDir dir;
  CustomOptions o;  // mase-search custom --space x=int:1:3 --command '...; sleep 30; echo {x}'
  o.space = "x=int:1:3";
  const std::string started = dir.file("started");
  o.command = "touch " + started + "; sleep 30; echo {x}";
  o.sampler = "random";
  o.trials = 3;
  o.dir = (dir.path / "s").string();
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  const auto t0 = Clock::now();
  {
    StopWhenStarted stopper(started);
    run_custom(o);  // returns once stopped: no second trial is asked for
  }
  std::fclose(o.out);
  CHECK(seconds_since(t0) < 15);
  const std::vector<TrialRecord> trials = Study::load(o.dir + "/studies.db", "custom").trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].trial.state == TrialState::failed);
  CHECK(trials[0].retryable);  // --resume runs its parameters again first
  CHECK(contains(trials[0].attrs.at("error"), "[search] stopped: the command was sent SIGTERM: touch "));
}
