// search/study.cpp — a study kept in Optuna's tables (a SQLite file or a PostgreSQL database):
// the trial life cycle — resume, ask, tell, report, optimize. Opening and loading a study are
// study_open.cpp, reading its results study_results.cpp. Read search/study.h first; the tables
// are search/optuna_schema.h, the values' Optuna forms search/optuna_format.h, the database
// plumbing search/study_store.h (one SQL text for both backends).
#include "search/study.h"

#include <sys/types.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/study_rows.h"
#include "search/study_store.h"
#include "search/trial_queue.h"

namespace mase::search {

namespace {

using nlohmann::json;
using store::Database;
using store::Statement;
using store::Transaction;
using namespace rows;

}  // namespace

// --- the trial life cycle ---

int Study::resume(double stale_after_s) {
  const std::string host = store::host_name();
  const int64_t me = getpid();
  Transaction tx(*db_);
  // The running trials this host's mase processes started (an Optuna worker's have no pid).
  Statement running(*db_,
                    "SELECT t.trial_id, p.value_json FROM trials t "
                    "JOIN trial_system_attributes h ON h.trial_id = t.trial_id "
                    "AND h.key = 'mase:host' AND h.value_json = ?2 "
                    "JOIN trial_system_attributes p ON p.trial_id = t.trial_id "
                    "AND p.key = 'mase:pid' WHERE t.study_id = ?1 AND t.state = 'RUNNING'",
                    "read running trials");
  running.bind(1, study_id_).bind(2, optuna::attr_json(host));
  std::vector<std::pair<int64_t, std::string>> gone;  // (trial id, why)
  while (running.step()) {
    int64_t pid = std::atoll(running.text(1).c_str());
    // kill(pid, 0) sends nothing: it only asks whether the process exists. ESRCH: it does not
    // (EPERM means it exists but belongs to someone else). Our own trials may still be in
    // progress in this process; a pid <= 0 names no process (kill would mean a process group).
    bool dead = pid <= 0 || (pid != me && kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH);
    if (dead)
      gone.emplace_back(running.int64(0),
                        cat("process ", pid, " on ", host, " ended before the trial did"));
  }
  // Any host's (or an Optuna worker's): a heartbeat older than stale_after_s (trial_heartbeats
  // holds the database's CURRENT_TIMESTAMP, as Optuna's record_heartbeat writes it).
  const std::string stale_sql =
      "SELECT t.trial_id, h.heartbeat FROM trials t JOIN trial_heartbeats h "
      "ON h.trial_id = t.trial_id WHERE t.study_id = ?1 AND t.state = 'RUNNING' AND " +
      db_->seconds_since("h.heartbeat") + " > ?2";
  Statement stale(*db_, stale_sql.c_str(), "read stale heartbeats");
  stale.bind(1, study_id_).bind(2, stale_after_s);
  while (stale.step()) {
    const int64_t id = stale.int64(0);
    bool seen = false;
    for (const auto& g : gone) seen = seen || g.first == id;
    if (!seen)
      gone.emplace_back(id, cat("no heartbeat since ", stale.text(1).substr(0, 19), " (more than ",
                                stale_after_s, " s): its worker is gone"));
  }
  Statement mark(*db_,
                 "UPDATE trials SET state = 'FAIL', datetime_complete = ?2 WHERE trial_id = ?1",
                 "mark trial failed");
  for (const auto& [id, why] : gone) {  // its worker died, not its parameters: retried
    mark.bind(1, id).bind(2, optuna::time_now()).run();
    insert_attrs(*db_, id, {{"error", why}});
    queue::mark_retryable(*db_, id);
  }
  tx.commit();
  return static_cast<int>(gone.size());
}

std::optional<Trial> Study::ask(std::optional<int64_t> budget) {
  // Reading the history, sampling and inserting happen under one write lock: another process
  // asking at the same moment waits, then sees this trial (running) in its history.
  Transaction tx(*db_);
  std::vector<TrialRecord> records = load_trials(*db_, study_id_, space_);
  std::vector<Trial> history;
  int64_t number = 0, taken = 0;  // taken: finished or running, what a budget counts
  for (const TrialRecord& r : records) {
    number = std::max(number, r.trial.number + 1);
    if (r.waiting) continue;  // not started: no params, nothing a sampler can learn from
    history.push_back(r.trial);
    // Samplers maximize (search/sampler.h): a minimizing study shows them -value.
    // (Trial::objectives stay as they are: a sampler of several is told their directions.)
    const bool minimize = direction() == Direction::minimize;
    if (minimize) history.back().value = -r.trial.value;
    if (r.trial.state == TrialState::pruned && !r.intermediate.empty()) {  // how far it got
      const auto& [step, v] = *r.intermediate.rbegin();
      history.back().last_report = {step, minimize ? -v : v};
    }
    taken += r.trial.state != TrialState::failed;
  }
  const bool room = !budget || taken < *budget;
  // the first trial an Optuna script enqueued that this space can run (those before it that it
  // cannot are failed here, in this transaction)
  const TrialRecord* waiting = room ? queue::take_queued(*db_, space_, records) : nullptr;
  const TrialRecord* retry = room && !waiting ? queue::retry_candidate(records) : nullptr;
  std::optional<Values> values;
  if (retry) {
    values = retry->trial.values;
  } else if (room) {
    if (waiting) number = waiting->trial.number;
    values = sampler_->sample(space_, history, number);
    if (waiting) values = queue::fixed_values(space_, *waiting, values);
  }
  if (!values) {
    tx.commit();  // no trial started (enqueued trials the space lacks may have been failed)
    return std::nullopt;
  }

  int64_t trial_id = 0;
  if (waiting) {  // the enqueued row starts, with the number Optuna gave it
    trial_id = waiting->trial_id;
    Statement start(*db_,
                    "UPDATE trials SET state = 'RUNNING', datetime_start = ?2 WHERE trial_id = ?1",
                    "start enqueued trial");
    start.bind(1, trial_id).bind(2, optuna::time_now()).run();
    // Optuna's RetryFailedTrialCallback queues a copy of a failed trial's system attributes:
    // a mase worker's retry mark would make this trial retried if it fails by its own error
    Statement unmark(*db_,
                     "DELETE FROM trial_system_attributes WHERE trial_id = ?1 "
                     "AND key = 'mase:retry'",
                     "start enqueued trial");
    unmark.bind(1, trial_id).run();
  } else {
    Statement ins(*db_,
                  "INSERT INTO trials(number, study_id, state, datetime_start) "
                  "VALUES(?1, ?2, 'RUNNING', ?3) RETURNING trial_id",
                  "insert trial");
    MASE_CHECK(ins.bind(1, number).bind(2, study_id_).bind(3, optuna::time_now()).step(), IoError,
               "[study] insert trial ", number, " on ", db_->where(),
               ": expected its id, got none");
    trial_id = ins.int64(0);
    ins.reset();  // (the row is in; a RETURNING statement left open would block the COMMIT)
  }
  Statement who(*db_,
                "INSERT INTO trial_system_attributes(trial_id, key, value_json) "
                "VALUES(?1, 'mase:pid', ?2), (?1, 'mase:host', ?3) ON CONFLICT(trial_id, key) "
                "DO UPDATE SET value_json = excluded.value_json",  // a queued copy's: now ours
                "insert trial");
  who.bind(1, trial_id).bind(2, std::to_string(getpid()));
  who.bind(3, optuna::attr_json(store::host_name())).run();
  // what the sampler keeps with the trial (NSGA-II: its generation), worked out from the same
  // history as its values, in the same transaction; a queued trial that has one keeps it, as
  // Optuna's get_trial_generation returns a stored generation
  Statement sys(*db_,
                "INSERT INTO trial_system_attributes(trial_id, key, value_json) VALUES(?1, ?2, ?3) "
                "ON CONFLICT(trial_id, key) DO NOTHING",
                "insert trial");
  // A retry runs the interrupted trial's values again, and keeps its generation too (Optuna's
  // RetryFailedTrialCallback copies every system attribute of the failed trial).
  std::vector<std::pair<std::string, std::string>> attrs =
      retry && retry->trial.generation >= 0
          ? std::vector<std::pair<std::string, std::string>>{{"NSGAIISampler:generation",
                                                              std::to_string(retry->trial.generation)}}
          : sampler_->trial_attrs(history, number);
  for (const auto& [key, value_json] : attrs)
    sys.bind(1, trial_id).bind(2, key).bind(3, value_json).run();
  Trial trial;  // running, its values filled below
  trial.number = number;
  if (retry) {  // Optuna's RetryFailedTrialCallback's attributes (raw JSON, not strings)
    std::vector<int64_t> chain = retry->retry_history;
    chain.push_back(retry->trial.number);
    Statement why(*db_,
                  "INSERT INTO trial_system_attributes(trial_id, key, value_json) "
                  "VALUES(?1, 'failed_trial', ?2), (?1, 'retry_history', ?3)",
                  "insert trial");
    why.bind(1, trial_id).bind(2, std::to_string(retry->trial.number));
    why.bind(3, queue::json_list(chain)).run();
    trial.retry_of = retry->trial.number;
  }

  // (a queued trial's params already stored are its fixed values: queue::fixed_values)
  Statement ins_param(*db_,
                      "INSERT INTO trial_params(trial_id, param_name, param_value, "
                      "distribution_json) VALUES(?1, ?2, ?3, ?4) "
                      "ON CONFLICT(trial_id, param_name) DO NOTHING",
                      "write trial values");
  for (const Param& p : space_.params()) {
    auto it = values->find(p.name);
    MASE_CHECK(it != values->end() && p.contains(it->second), ConfigError, "[study] sampler ",
               sampler_->name(), " gave parameter '", p.name, "' no valid value in trial ", number);
    trial.values[p.name] = it->second;  // Optuna's internal form is mase's: stored exactly
    ins_param.bind(1, trial_id).bind(2, p.name).bind(3, it->second);
    ins_param.bind(4, optuna::distribution_json(p)).run();
  }
  tx.commit();
  return trial;
}

void Study::tell(int64_t number, TrialState state, double value,
                 const std::map<std::string, std::string>& attrs) {
  // several objectives: a failed trial has no values, nor has a pruned one (its last report
  // is one number; Optuna's tell(state=PRUNED) keeps none there)
  MASE_CHECK(directions_.size() == 1 || state == TrialState::failed ||
                 state == TrialState::pruned,
             ConfigError, "[study] tell(trial ", number, ") expected ", directions_.size(),
             " values (one per objective), got one");
  tell(number, state, directions_.size() == 1 ? std::vector<double>{value} : std::vector<double>{},
       attrs);
}

void Study::tell(int64_t number, TrialState state, const std::vector<double>& values,
                 const std::map<std::string, std::string>& attrs) {
  MASE_CHECK(state != TrialState::running, ConfigError, "[study] tell(trial ", number,
             ") expected a final state (complete, failed, pruned), got running");
  MASE_CHECK(state == TrialState::failed || values.size() == directions_.size() ||
                 (state == TrialState::pruned && values.empty()),
             ConfigError,
             "[study] tell(trial ", number, ") expected ", directions_.size(),
             directions_.size() == 1 ? " value" : " values (one per objective)", ", got ",
             values.size());
  std::map<std::string, std::string> all = attrs;
  const bool nan = std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); });
  if (state == TrialState::complete && nan) {
    // As in Optuna: a NaN cannot be ranked, so the trial counts as failed.
    state = TrialState::failed;
    all.emplace("error", "the objective returned nan");
  }
  Transaction tx(*db_);
  const int64_t trial_id = running_trial(number);
  Statement upd(*db_, "UPDATE trials SET state = ?2, datetime_complete = ?3 WHERE trial_id = ?1",
                "record trial outcome");
  upd.bind(1, trial_id).bind(2, std::string(optuna::state_name(state)));
  upd.bind(3, optuna::time_now()).run();
  // A failure has no value. A pruned trial keeps every value or none: told a NaN (its last
  // report) none, as Optuna's tell (objective 1's row without objective 0's is a trial Optuna's
  // storage cannot read back).
  if (state != TrialState::failed && !nan) {
    Statement val(*db_,
                  "INSERT INTO trial_values(trial_id, objective, value, value_type) "
                  "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(trial_id, objective) DO UPDATE "
                  "SET value = excluded.value, value_type = excluded.value_type",
                  "record trial outcome");
    for (size_t k = 0; k < values.size(); ++k) {
      const double value = values[k];
      val.bind(1, trial_id).bind(2, static_cast<int64_t>(k));
      std::isinf(value) ? val.bind_null(3) : val.bind(3, value);
      val.bind(4, std::string(std::isinf(value) ? (value > 0 ? "INF_POS" : "INF_NEG") : "FINITE"));
      val.run();
    }
  }
  insert_attrs(*db_, trial_id, all);
  tx.commit();
}

void Study::tell(int64_t number, const Outcome& o) {
  for (const auto& [name, v] : o.constraints) set_constraint(number, name, v);
  if (o.values.empty()) tell(number, o.state, o.value, o.attrs);
  else tell(number, o.state, o.values, o.attrs);
}

void Study::interrupted(int64_t number, const std::string& why) {
  Transaction tx(*db_);  // failed and retryable together: no worker sees one without the other
  const int64_t trial_id = running_trial(number);
  Statement upd(*db_,
                "UPDATE trials SET state = 'FAIL', datetime_complete = ?2 WHERE trial_id = ?1",
                "record trial outcome");
  upd.bind(1, trial_id).bind(2, optuna::time_now()).run();
  insert_attrs(*db_, trial_id, {{"error", why}});
  queue::mark_retryable(*db_, trial_id);
  tx.commit();
}

void Study::heartbeat(int64_t number) {
  Transaction tx(*db_);
  const int64_t trial_id = running_trial(number);
  Statement beat(*db_,
                 "INSERT INTO trial_heartbeats(trial_id, heartbeat) VALUES(?1, CURRENT_TIMESTAMP) "
                 "ON CONFLICT(trial_id) DO UPDATE SET heartbeat = CURRENT_TIMESTAMP",
                 "record heartbeat");
  beat.bind(1, trial_id).run();
  tx.commit();
}

void Study::report(int64_t number, int64_t step, double value) {
  MASE_CHECK(directions_.size() == 1, ConfigError, "[study] report(trial ", number, ") expected a "
             "study of one objective, got ", directions_.size(), " (as in Optuna, a pruner judges one)");
  Transaction tx(*db_);
  const int64_t trial_id = running_trial(number);
  Statement ins(*db_,
                "INSERT INTO trial_intermediate_values(trial_id, step, intermediate_value, "
                "intermediate_value_type) VALUES(?1, ?2, ?3, ?4) "
                "ON CONFLICT(trial_id, step) DO UPDATE "
                "SET intermediate_value = excluded.intermediate_value, "
                "intermediate_value_type = excluded.intermediate_value_type",
                "record intermediate value");
  // as Optuna stores a non-finite report: NULL, its kind in the type column (study_rows.cpp)
  ins.bind(1, trial_id).bind(2, step);
  std::isfinite(value) ? ins.bind(3, value) : ins.bind_null(3);
  ins.bind(4, std::string(std::isnan(value)   ? "NAN"
                          : std::isinf(value) ? (value > 0 ? "INF_POS" : "INF_NEG")
                                              : "FINITE"));
  ins.run();
  tx.commit();
}

void Study::set_constraint(int64_t number, const std::string& name, double value) {
  MASE_CHECK(!std::isnan(value), ConfigError, "[study] trial ", number, ": constraint '", name,
             "' expected a number, got nan (as in Optuna: a NaN constraint is refused)");
  set_trial_attr(number, cat("constraints:", name), optuna::number_json(value),
                 "record constraint");
}

void Study::record_rung(int64_t number, int rung, double value) {
  set_trial_attr(number, cat("completed_rung_", rung), optuna::number_json(value), "record rung");
}

void Study::set_trial_attr(int64_t number, const std::string& key, const std::string& json,
                           const char* op) {
  Transaction tx(*db_);
  const int64_t trial_id = running_trial(number);
  Statement ins(*db_,
                "INSERT INTO trial_system_attributes(trial_id, key, value_json) VALUES(?1, ?2, ?3) "
                "ON CONFLICT(trial_id, key) DO UPDATE SET value_json = excluded.value_json",
                op);
  ins.bind(1, trial_id).bind(2, key).bind(3, json).run();
  tx.commit();
}

int64_t Study::running_trial(int64_t number) const {
  Statement find(*db_, "SELECT trial_id, state FROM trials WHERE study_id = ?1 AND number = ?2",
                 "read trial");
  MASE_CHECK(find.bind(1, study_id_).bind(2, number).step(), ConfigError, "[study] study '", name_,
             "' has no trial ", number, " (tell only trials that ask returned)");
  const TrialState state = optuna::state_from_name(find.text(1));
  MASE_CHECK(state == TrialState::running, ConfigError, "[study] trial ", number, " of study '",
             name_, "' is already ", to_string(state),
             ", not running (told twice, or marked failed by resume)");
  return find.int64(0);
}

void Study::optimize(const Objective& objective, int n_trials,
                     const std::function<void(const TrialRecord&)>& on_trial) {
  for (int i = 0; i < n_trials; ++i) {
    std::optional<Trial> trial = ask();
    if (!trial) break;  // an exhausted grid
    std::optional<Outcome> outcome;
    std::string error;
    try {
      outcome = objective(Params(space_, trial->values), trial->number);
    } catch (const std::exception& e) {  // mase::Error included: it derives from std::exception
      error = e.what();
    } catch (...) {
      // Something we cannot describe (not a std::exception): record it, then let it go on up.
      tell(trial->number, TrialState::failed, 0, {{"error", "a non-standard exception"}});
      throw;
    }
    if (outcome && outcome->state == TrialState::running) {
      outcome.reset();  // not a final state: a bug in the objective, recorded like a throw
      error = "the objective returned state running (expected complete or pruned)";
    }
    // One value per objective (Optuna's optimize fails the trial otherwise, and goes on);
    // tell would refuse it, leaving the trial running. A pruned outcome may give none.
    const size_t given = outcome && !outcome->values.empty() ? outcome->values.size() : 1;
    if (outcome && given != directions_.size() &&
        !(outcome->state == TrialState::pruned && outcome->values.empty())) {
      outcome.reset();
      error = cat("the objective returned ", given, given == 1 ? " value" : " values",
                  ", expected ", directions_.size(), " (one per objective)");
    }
    if (outcome)
      tell(trial->number, *outcome);
    else
      tell(trial->number, TrialState::failed, 0, {{"error", error}});
    if (on_trial) on_trial(load_trials(*db_, study_id_, space_, trial->number).at(0));
  }
}

}  // namespace mase::search
