// search/trial_queue.cpp — the queue ask() serves before its sampler (see trial_queue.h).
#include "search/trial_queue.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/space_json.h"
#include "search/study_rows.h"
#include "search/study_store.h"

namespace mase::search {

std::vector<int64_t> retries_due(const std::vector<TrialRecord>& trials) {
  std::set<int64_t> retried;
  for (const TrialRecord& r : trials)
    if (r.retry_of >= 0) retried.insert(r.retry_of);
  std::vector<int64_t> due;
  for (const TrialRecord& r : trials)  // by number (load_trials' order)
    if (r.trial.state == TrialState::failed && r.retryable && !retried.count(r.trial.number) &&
        static_cast<int>(r.retry_history.size()) < kMaxRetries)
      due.push_back(r.trial.number);
  return due;
}

namespace queue {

using nlohmann::json;

// A failed trial that was stopped rather than wrong (Ctrl-C, a dead worker): ask() runs its
// parameters again.
void mark_retryable(store::Database& db, int64_t trial_id) {
  rows::insert_attrs(db, trial_id, {{"mase:retry", "interrupted"}}, "trial_system_attributes");
}

// The trial whose parameters ask() runs again: the first of retries_due().
const TrialRecord* retry_candidate(const std::vector<TrialRecord>& records) {
  const std::vector<int64_t> due = retries_due(records);
  for (const TrialRecord& r : records)
    if (!due.empty() && r.trial.number == due.front()) return &r;
  return nullptr;
}

// An enqueued trial's values: its fixed_params (Optuna's external form: a categorical's choice,
// a number) in mase's internal form, and the params stored with its row, the sampler's `drawn`
// values for the parameters it does not fix; nullopt when it leaves one open and the sampler
// has nothing (an exhausted grid). ConfigError for a fixed value the space does not have.
std::optional<Values> fixed_values(const Space& space, const TrialRecord& r,
                                   std::optional<Values> drawn) {
  const json fixed = json::parse(r.fixed_params.empty() ? "{}" : r.fixed_params, nullptr, false);
  MASE_CHECK(fixed.is_object(), ConfigError, "[study] enqueued trial ", r.trial.number,
             ": expected fixed_params as a JSON object, got ", r.fixed_params);
  Values v = drawn.value_or(Values{});
  for (const Param& p : space.params()) {
    // params stored with the row (Optuna's RetryFailedTrialCallback queues a failed trial's
    // params so, not as fixed_params) are fixed too: Optuna runs them
    const auto stored = r.trial.values.find(p.name);
    if (!fixed.contains(p.name) && stored != r.trial.values.end()) {
      MASE_CHECK(p.contains(stored->second), ConfigError, "[study] enqueued trial ",
                 r.trial.number, " has ", p.name, " = ", stored->second,
                 " stored, which its space (", describe(param_to_json(p)), ") does not have");
      v[p.name] = stored->second;
      continue;
    }
    if (!fixed.contains(p.name)) {
      if (!drawn) return std::nullopt;
      continue;
    }
    const json& x = fixed.at(p.name);
    double internal = NAN;
    if (p.kind == Param::Kind::categorical) {  // Optuna keeps the choice; mase its index
      const std::string text = x.is_string() ? x.get<std::string>() : x.dump();
      for (size_t i = 0; i < p.choices.size(); ++i)
        if (p.choices[i] == text) internal = static_cast<double>(i);
    } else if (x.is_number()) {
      internal = x.get<double>();
    }
    MASE_CHECK(!std::isnan(internal) && p.contains(internal), ConfigError, "[study] enqueued trial ",
               r.trial.number, " fixes ", p.name, " = ", x.dump(), ", which its space (",
               describe(param_to_json(p)), ") does not have");
    v[p.name] = internal;
  }
  return v;
}

// The first enqueued trial this space can run; each one before it that it cannot is failed.
const TrialRecord* take_queued(store::Database& db, const Space& space,
                               const std::vector<TrialRecord>& records) {
  for (const TrialRecord& r : records) {
    if (!r.waiting) continue;
    try {
      (void)fixed_values(space, r, Values{});  // every fixed value checked, nothing drawn
      return &r;
    } catch (const ConfigError& e) {
      // Left WAITING, every worker's ask would take it and refuse it again, for ever.
      store::Statement fail(db,
                            "UPDATE trials SET state = 'FAIL', datetime_start = ?2, "
                            "datetime_complete = ?2 WHERE trial_id = ?1",
                            "fail enqueued trial");
      fail.bind(1, r.trial_id).bind(2, optuna::time_now()).run();
      rows::insert_attrs(db, r.trial_id,
                         {{"error", cat(e.what(), " (not run: marked failed, the queue goes on)")}});
    }
  }
  return nullptr;
}

// [3, 7] as Python's json.dumps writes it (what Optuna's own callback stores)
std::string json_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace queue
}  // namespace mase::search
