// search/workers.cpp — fork N - 1 copies of this process onto one study, and wait for them.
// Read search/workers.h first (why this is safe with SQLite, and how the tool uses it).
#include "search/workers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "search/worker_usage.h"

#include "runtime/error.h"

namespace mase::search {

// ---- forwarding the stop signals (workers.h, "Signals") -----------------------------------
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_before[std::size(kStopSignals)];  // each signal's handler before ours
bool g_wrapped[std::size(kStopSignals)] = {};        // ours is installed for it

// What the handler reads; all lock-free atomics (a handler may touch nothing else).
std::atomic<pid_t> g_parent{0};                       // the forwarding process
std::atomic<std::atomic<pid_t>*> g_copies{nullptr};   // its copies' pids (Workers::forward_to_)
std::atomic<int> g_ncopies{0};                        // how many of them are forked
std::atomic<int> g_in_handler{0};                     // handlers reading g_copies now
std::atomic<int> g_direct{0}, g_forwarded{0}, g_seen{0};  // a copy's signals, by way
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

extern "C" void mase_forward_stop_signal(int sig, siginfo_t* info, void* context) {
  const pid_t parent = g_parent.load();
  if (::getpid() == parent) {  // the parent: to every copy still there
    ++g_in_handler;
    std::atomic<pid_t>* copies = g_copies.load();
    for (int i = 0, n = g_ncopies.load(); copies && i < n; ++i)
      if (const pid_t pid = copies[i].load(); pid > 0) ::kill(pid, sig);
    --g_in_handler;
  } else {  // a copy: a forwarded signal and the same one sent directly (Ctrl-C) are one
    const bool forwarded = info->si_code == SI_USER && info->si_pid == parent;
    const int n = forwarded ? ++g_forwarded : ++g_direct;
    if (n <= g_seen.load()) return;  // the other way's copy of a signal already handled
    g_seen.store(n);                 // (the stop signals are masked during the handler)
  }
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {  // then what the process did before
    if (kStopSignals[i] != sig) continue;
    const struct sigaction& before = g_before[i];
    if (before.sa_flags & SA_SIGINFO) before.sa_sigaction(sig, info, context);
    else before.sa_handler(sig);
  }
}

// Called in the parent before its first fork; false when nothing is forwarded.
bool start_forwarding(std::atomic<pid_t>* copies) {
  if (g_parent.load() != 0) return false;  // another Workers of this process forwards
  g_copies = copies;
  g_ncopies = 0;
  g_direct = g_forwarded = g_seen = 0;
  g_parent = ::getpid();
  struct sigaction ours {};
  ours.sa_sigaction = mase_forward_stop_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;  // SA_RESTART: as std::signal's handlers have
  sigemptyset(&ours.sa_mask);
  for (int sig : kStopSignals) sigaddset(&ours.sa_mask, sig);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], nullptr, &g_before[i]);
    const bool caught = (g_before[i].sa_flags & SA_SIGINFO) ||
                        (g_before[i].sa_handler != SIG_DFL && g_before[i].sa_handler != SIG_IGN);
    g_wrapped[i] = caught && sigaction(kStopSignals[i], &ours, nullptr) == 0;
  }
  return true;
}

// Called in the parent once every copy is reaped: the handlers as they were.
void stop_forwarding() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    if (g_wrapped[i]) sigaction(kStopSignals[i], &g_before[i], nullptr), g_wrapped[i] = false;
  g_ncopies = 0;
  g_copies = nullptr;
  g_parent = 0;
}

}  // namespace

Workers::Workers(int n, Study& study) : Workers(n, std::span<Study>(&study, 1)) {}

Workers::Workers(int n, std::span<Study> studies) {
  MASE_CHECK(n >= 1, ConfigError, "[workers] expected --workers >= 1, got ", n);
  pids_.push_back(getpid());
  started_s_ = wall_clock_s();
  if (n == 1) return;
  std::vector<std::pair<std::string, std::string>> where;  // (storage, name) of each study
  for (Study& s : studies) {
    where.emplace_back(s.storage(), s.name());
    Study closing = std::move(s);  // no connection may cross the fork
  }
  std::fflush(nullptr);                  // or buffered output would be printed by every copy
  forward_to_ = std::make_unique<std::atomic<pid_t>[]>(static_cast<size_t>(n - 1));  // zeros
  if (!start_forwarding(forward_to_.get())) forward_to_.reset();
  for (int i = 1; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {  // a copy: it has no copies of its own to wait for (nor to forward to)
      index_ = i;
      children_.clear();
      pids_ = {getpid()};
      forward_to_.reset();
      break;
    }
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      wait();
      throw IoError(cat("[workers] fork of worker ", i, " of ", n, ": ", why,
                        " (too many processes? try fewer --workers)"));
    }
    children_.push_back(pid);
    pids_.push_back(pid);
    if (forward_to_) forward_to_[i - 1] = pid, g_ncopies = i;  // signals reach it from now on
  }
  try {
    for (size_t i = 0; i < studies.size(); ++i)  // every process its own connection, the stored
      studies[i] = Study::load(where[i].first, where[i].second);  // sampler and seed
  } catch (...) {  // the parent: its copies first, as the destructor (which will not run) would
    if (!children_.empty()) wait();
    throw;
  }
}

Workers::~Workers() {
  if (!children_.empty()) wait();
}

int Workers::wait() {
  int failed = 0;
  for (size_t i = 0; i < children_.size(); ++i) {
    const pid_t pid = children_[i];
    if (forward_to_) {  // exited, but not reaped yet: its pid cannot be another process's
      siginfo_t info;
      while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == -1 &&
             errno == EINTR) {
      }
      forward_to_[i] = 0;  // no handler signals it from now on: none that read it is running
      while (g_in_handler.load() > 0) std::this_thread::yield();
    }
    int status = 0;
    while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
    }
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  children_.clear();
  if (forward_to_) stop_forwarding(), forward_to_.reset();
  return failed;
}

}  // namespace mase::search
