// search/trial_queue.h — what Study::ask hands out before its sampler draws anything new.
//
// In this order:
//   1. a trial an Optuna script put in the queue (study.enqueue_trial: a WAITING row with its
//      "fixed_params"; RetryFailedTrialCallback: one with the failed trial's params and system
//      attributes): it keeps its number; the parameters it does not fix are the sampler's.
//      One that fixes a value the space does not have is marked FAIL (its "error" attribute
//      says why) and skipped: left waiting, it would stop every worker's ask;
//   2. the parameters of a trial that was stopped, not wrong — Ctrl-C (Study::interrupted) or
//      a worker that died (Study::resume) — again, as a new trial, at most kMaxRetries times
//      for one set of parameters, recorded as Optuna's RetryFailedTrialCallback records it;
//   3. the sampler's draw.
// A trial that failed by its own error is not run again (as in Optuna): a grid hands its cell
// out again, random and TPE draw afresh. Everything here runs inside ask()'s write
// transaction, so two workers never take the same queued trial or retry the same one twice.
// Read next: search/study.cpp (ask, interrupted, resume).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/study.h"

namespace mase::search {

namespace store {
class Database;
}

// How many times one trial's parameters run again after interruptions (a trial whose worker
// is killed by its own parameters — out of memory — must not be retried forever).
inline constexpr int kMaxRetries = 3;

// The retryable failed trials no trial has retried yet, whose chain is shorter than
// kMaxRetries, by number: what the next asks run again, in this order.
std::vector<int64_t> retries_due(const std::vector<TrialRecord>& trials);

namespace queue {

// Marks a failed trial retryable (system attribute "mase:retry").
void mark_retryable(store::Database& db, int64_t trial_id);
// The trial whose parameters ask() runs again (the first of retries_due), or nullptr.
const TrialRecord* retry_candidate(const std::vector<TrialRecord>& records);
// An enqueued trial's values: its fixed_params (Optuna's external form: a categorical's
// choice, a number) in mase's internal form, and the params stored with its row (how Optuna's
// RetryFailedTrialCallback queues a failed trial again), the sampler's `drawn` values for the
// parameters it does not fix; nullopt when it leaves one open and the sampler has nothing (an
// exhausted grid). ConfigError for a fixed value the space does not have.
std::optional<Values> fixed_values(const Space& space, const TrialRecord& r,
                                   std::optional<Values> drawn);
// The lowest-numbered enqueued (waiting) trial of `records` whose fixed_params the space has,
// or nullptr. Each waiting trial before it that fixes a value the space does not have (or whose
// fixed_params are not a JSON object) is marked FAIL in `db`, with fixed_values' message as
// its "error" user attribute: an Optuna script enqueued it for a space this worker does not
// search, and no worker could ever run it.
const TrialRecord* take_queued(store::Database& db, const Space& space,
                               const std::vector<TrialRecord>& records);
// [3, 7] as Python's json.dumps writes it (what Optuna's own callback stores)
std::string json_list(const std::vector<int64_t>& v);

}  // namespace queue
}  // namespace mase::search
