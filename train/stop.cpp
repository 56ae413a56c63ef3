// train/stop.cpp — stopping a run cleanly: what Ctrl-C, SIGTERM and SIGHUP do (train/trainer.h,
// "Stopping"). The loop polls stop_requested() between steps; the signal handler only sets a
// flag and writes one line, the two things a handler may safely do.
//
// Which thread runs the handler matters. Debian's oneDNN (2.6.3) points its JIT'd GEMM kernels'
// rsp at a heap buffer while they run; a signal handled on a thread inside one of them has its
// frame written there by the kernel, over the heap (uxlfoundation/oneDNN#4845, fixed in oneDNN
// 3.12 by #4855). Measured on a 2-core Zen 5 (a bert-tiny-sized run of 8 layers, Ctrl-C 2-3 s
// in, a busy loop on the other core): 6 of 96 Ctrl-Cs aborted a few ms later with "corrupted
// size vs. prev_size" in a oneDNN GEMM; none of 40 with oneDNN off (MASE_SGEMM=openblas), none
// of 40 with one thread, and none of 60 since the signals moved off those threads. So the
// threads that run kernels — the one that installs the handlers (main) and every oneTBB worker
// (a task_scheduler_observer blocks them as they join) — block the stop signals, and one idle
// thread of ours, which runs nothing else, takes them: a signal sent to the process is handled
// by a thread that does not block it. A fork (mase-search --workers) gets that thread again in
// the child (pthread_atfork), which would otherwise have none and never see its Ctrl-C.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

#include <tbb/task_scheduler_observer.h>

#include "train/trainer.h"

namespace mase::train {

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop must be signal-safe");

// The first SIGINT, SIGTERM or SIGHUP asks for a clean stop; a second one of any exits at once
// (128 + signal, as a shell reports it), even where the process is stuck outside the training
// loop (a library's thread shutdown at exit). Only async-signal-safe calls: write(2), _exit(2).
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    const char quit[] = "\n[train] second signal: quitting at once (no checkpoint from now on)\n";
    ssize_t ignored = ::write(STDERR_FILENO, quit, sizeof quit - 1);
    (void)ignored;
    ::_exit(128 + sig);
  }
  const char msg[] = "\n[train] stopping after this step: saving a checkpoint "
                     "(press Ctrl-C again to quit at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

sigset_t stop_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);  // a closed terminal, a scheduler's "hang up": a stop like SIGTERM's
  return s;
}

// The thread that takes the signals: it waits in pause(), which returns after each handler.
void start_signal_thread() {
  std::thread([] {
    const sigset_t s = stop_signals();
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
    for (;;) ::pause();
  }).detach();
}

// Every thread that joins oneTBB's arena (the kernels' workers) blocks the stop signals, once:
// a worker re-enters the arena at every parallel region it wakes up for, and the mask, once
// set, stays.
struct BlockStopSignals : tbb::task_scheduler_observer {
  BlockStopSignals() { observe(true); }
  void on_scheduler_entry(bool) override {
    thread_local bool blocked = false;
    if (blocked) return;
    const sigset_t s = stop_signals();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
    blocked = true;
  }
};
}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }
void clear_stop() { g_stop.store(false); }
void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  struct sigaction hup {};
  sigaction(SIGHUP, nullptr, &hup);
  if (hup.sa_handler != SIG_IGN) std::signal(SIGHUP, on_stop_signal);  // nohup's stays ignored
  static std::once_flag once;
  std::call_once(once, [] {
    start_signal_thread();  // before this thread blocks: it starts with the signals open
    new BlockStopSignals;   // never destroyed: workers may join until the process exits
    const sigset_t s = stop_signals();
    pthread_sigmask(SIG_BLOCK, &s, nullptr);
    pthread_atfork(nullptr, nullptr, [] { start_signal_thread(); });
  });
}

}  // namespace mase::train
