// search/workers.h — several processes on one study: `mase-search --workers N`.
//
// A study lives in its storage (a SQLite file, or a PostgreSQL database that workers on other
// machines share too), and Study::ask holds the storage's write lock while it reads the
// history, samples and inserts the new running trial (search/study.h, study_store.h), so
// processes that share the study never take the same trial: the grid sampler skips the points of running
// trials, TPE's constant liar counts them as bad (search/tpe.h), and ask(budget) counts them
// against the budget, so N workers stop at exactly `budget` finished trials.
//
// Workers forks N - 1 copies of the calling process; every process, the parent included, then
// runs the same trial loop on its own connection (a connection, SQLite's or libpq's socket,
// must never cross a fork: the study's is closed before forking and opened again in every
// process, with the sampler and seed stored with the study, Study::load). The parent then waits for its copies.
//
//   Workers workers(n, study);                 // study: open, checked, resumed
//   while (auto t = study.ask(budget)) { ... study.tell(...); }
//   if (workers.is_copy()) return 0;           // a copy ends here (leaving main is fine: it is
//                                              // a whole copy of the program)
//   int failed = workers.wait();               // the parent: copies that exited non-zero
//
// The lab commands (search/lab_commands.h) run several studies one after the other: every
// process walks them in order, moving on when a study's budget is finished *or running in
// another process*, so a worker that finds nothing left to claim in one study helps with the
// next; the parent writes the CSVs and the figure once every copy is done.
//
// Signals. Ctrl-C in a terminal reaches every process of the group, and each stops its running
// trial (train::install_stop_handlers; failed and retryable: Study::interrupted). A stop signal
// sent to the parent alone (`kill PID`, a scheduler's SIGTERM, SIGHUP) reaches its copies too:
// from the fork until wait() has reaped them, the parent's handler of each stop signal the
// process catches (SIGINT, SIGTERM, SIGHUP; one ignored or left to its default is left alone)
// first sends it to every copy still there (kill(2) only: async-signal-safe), then does what
// it did before. A copy counts a signal its parent forwarded and the same one sent to it
// directly (Ctrl-C: both arrive) as one, so the first Ctrl-C stops it cleanly and the second
// quits at once, as in a single process. One Workers of a process forwards at a time.
// Read next: search/study.h, tools/mase_search.cpp.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "search/study.h"

namespace mase::search {

class Workers {
 public:
  // n >= 1 (ConfigError otherwise); n == 1 forks nothing and leaves `study` as it is.
  // IoError if a fork fails, or whatever Study::load throws reopening the study after it (the
  // copies already started are waited for first).
  Workers(int n, Study& study);
  // The same for several studies of one storage: each is closed before forking and loaded
  // again (Study::load) in every process.
  Workers(int n, std::span<Study> studies);
  ~Workers();  // the parent waits for copies still running (an exception left the loop)
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int index() const { return index_; }  // 0 in the parent, 1..n-1 in the copies
  bool is_copy() const { return index_ > 0; }
  // The parent: waits for every copy; returns how many did not exit with status 0.
  int wait();
  // The processes of this run, this one first (in a copy: itself only); kept after wait(),
  // for the report of how busy they were (search/worker_usage.h).
  const std::vector<int64_t>& pids() const { return pids_; }
  double started_s() const { return started_s_; }  // when, in seconds since 1970 (wall clock)

 private:
  int index_ = 0;
  std::vector<pid_t> children_;
  std::vector<int64_t> pids_;
  double started_s_ = 0;
  // the signal handler's view of children_ (0: not forked yet, or reaped); null when this
  // Workers does not forward (n == 1, a copy, or another Workers forwarding already)
  std::unique_ptr<std::atomic<pid_t>[]> forward_to_;
};

}  // namespace mase::search
