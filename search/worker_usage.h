// search/worker_usage.h — how busy the workers of a run were, read back from the storage.
//
// N workers finish a study N times faster only if all N are running trials all the time. Two
// things keep them from it even when each has cores of its own: the start (every process
// opens the study and loads its data before its first trial) and the end (a worker that finds
// no trial left to claim waits for the others' last ones — long when trials differ in cost,
// as the architectures of Lab 2 do, 1 to 13 s at the same number of steps). The storage
// keeps every trial's start and end to the microsecond and the process that ran it, so the
// parent can say afterwards where the time went:
//
//   workers   2 processes ran 16 trials in 35.6 s: busy 93% of 2 × 35.6 s (66.2 s of
//             trials); idle 4.9 s: 0.0 starting, 4.8 at the end, 0.0 between trials
//
// (one line when printed; Lab 2's whole space on a 2-core Zen 4, docs/scaling.md).
//
// speed-up over one worker = N × busy fraction ÷ (how much slower each trial ran beside the
// others: shared caches, memory bandwidth, turbo), which docs/scaling.md uses to tell a tail
// from contention.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "search/study.h"

namespace mase::search {

struct WorkerUsage {
  int workers = 0;         // processes the run started (--workers): pids.size()
  int trials = 0;          // trials that started and ended within [since, until]
  int processes = 0;       // distinct pids among them
  double wall_s = 0;       // until - since
  double busy_s = 0;       // the sum of those trials' durations
  // workers × wall_s - busy_s, in three parts: before each process's first trial (a process
  // that ran none: the whole wall), after each one's last, and the rest (between trials:
  // claiming the next, recording the last)
  double idle_start_s = 0, idle_end_s = 0, idle_between_s = 0;
  double busy_fraction() const { return wall_s > 0 ? busy_s / (workers * wall_s) : 0; }
};

// The trials of `trials` that ran within [since, until] (seconds since 1970, as
// TrialRecord::start_s) in one of the processes `pids` on `host` (Workers::pids,
// store::host_name; a study's other workers, on this machine or others, are not counted),
// grouped by process. `pids` must not be empty.
WorkerUsage worker_usage(std::span<const TrialRecord> trials, const std::string& host,
                         std::span<const int64_t> pids, double since, double until);

// The report's line, as above, without the leading "workers   ".
std::string describe(const WorkerUsage& u);

double wall_clock_s();  // now, in seconds since 1970: the clock the trials' times are kept in

class Workers;
// describe(worker_usage(...)) for a run's processes over the trials of its studies (the lab
// commands run several), from when `workers` started (before its fork) to now.
std::string describe_run(std::span<const Study> studies, const Workers& workers);

}  // namespace mase::search
