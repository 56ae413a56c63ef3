// search/heartbeat.h — a trial's worker says it is alive: a thread that refreshes the trial's
// row in trial_heartbeats (Study::heartbeat) every few seconds while the objective runs.
//
// The pid rule of Study::resume only sees this host's processes; a worker on another machine
// (or killed with its machine) is found by its heartbeat going stale instead, as Optuna's own
// workers find each other's (RDBStorage(heartbeat_interval=...), fail_stale_trials): the rows
// are the ones Optuna writes, so either side's resume sees the other's dead trials.
//
//   { Heartbeat beat(study, t->number); outcome = objective(...); }   // beats until the scope ends
//   study.tell(t->number, ...);
//
// The thread has its own connection (Study::load on the same storage and study): a connection
// (SQLite's or libpq's) is used by one thread at a time. A beat that fails (the file locked for more than
// the busy timeout) is skipped, not fatal: the next one tries again, and a trial outlives a few
// missed beats (kHeartbeatGrace_s is six intervals). Read next: search/study.h.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "search/study.h"

namespace mase::search {

class Heartbeat {
 public:
  // Beats for running trial `number` of `study` now and every interval_s seconds after.
  Heartbeat(const Study& study, int64_t number, double interval_s = kHeartbeatInterval_s);
  ~Heartbeat();  // stops the thread (at once, not after the interval)
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  int beats() const;  // how many beats were written (for tests)

 private:
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  int beats_ = 0;
  std::thread thread_;
};

}  // namespace mase::search
