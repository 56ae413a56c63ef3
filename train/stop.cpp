// train/stop.cpp — stopping a run cleanly: what Ctrl-C and SIGTERM do (train/trainer.h,
// "Stopping"). The loop polls stop_requested() between steps; the signal handler only sets a
// flag and writes one line, the two things a handler may safely do.
#include <unistd.h>

#include <atomic>
#include <csignal>

#include "train/trainer.h"

namespace mase::train {

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop must be signal-safe");

// The first SIGINT or SIGTERM asks for a clean stop; a second one of either kind exits at once
// (128 + signal, as a shell reports it), even where the process is stuck outside the training
// loop (a library's thread shutdown at exit). Only async-signal-safe calls: write(2), _exit(2).
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    const char quit[] = "\n[train] second signal: quitting at once (no checkpoint)\n";
    ssize_t ignored = ::write(STDERR_FILENO, quit, sizeof quit - 1);
    (void)ignored;
    ::_exit(128 + sig);
  }
  const char msg[] = "\n[train] stopping after this step: saving a checkpoint "
                     "(press Ctrl-C again to quit at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}
}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }
void clear_stop() { g_stop.store(false); }
void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

}  // namespace mase::train
