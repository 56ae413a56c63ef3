// search/study.h — a study: a space, a sampler and every trial, kept in Optuna's storage
// schema (search/optuna_schema.h) in a SQLite file or a PostgreSQL database, so Optuna and
// optuna-dashboard read mase's studies and mase continues Optuna's.
//
// The storage is the study's only state (several processes on one study: search/workers.h;
// on several machines: a PostgreSQL URL, docs/scaling.md). `ask` reads the history, lets the
// sampler propose, and inserts the new trial as RUNNING in one write transaction (the storage's
// write lock: search/study_store.h), so several processes can work on one study without two of
// them taking the same trial; `tell` records the outcome. A process that dies leaves its trials
// running: `resume()` marks those whose worker is gone (this host: the pid no longer exists; any
// host: a stale heartbeat) as failed and retryable, and the next ask() runs their parameters
// again (search/trial_queue.h). Each trial stores its values in
// Optuna's internal form with their distribution, its state, value, intermediate values, user
// attributes (model size, bits, ...), start and end times, and as system attributes the pid and
// host that ran it. The study keeps its sampler, seed and space as system attributes
// (mase:sampler, ...).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/sampler.h"
#include "search/space.h"

namespace mase::search {

namespace store {
class Database;
}

// A trial as stored: the sampler's view plus what the study records about it.
struct TrialRecord {
  Trial trial;  // value as the objective returned it (not negated)
  std::map<std::string, std::string> attrs;
  std::map<int64_t, double> intermediate;  // step -> value (Study::report, Optuna's report)
  // Successive halving's record (search/halving.h): rung -> the trial's value there, Optuna's
  // trial system attributes "completed_rung_<rung>" (Study::record_rung).
  std::map<int, double> rungs;
  std::string started_at, ended_at;  // ISO 8601 UTC; ended_at empty while running
  // The same two times in seconds since 1970, to the microsecond the storage keeps (NaN when
  // unknown, and end_s while the trial runs): what its duration is measured from
  // (search/worker_usage.h).
  double start_s = NAN, end_s = NAN;
  int64_t pid = 0;
  std::string host;
  // Retries (Study::interrupted, Study::resume; search/trial_queue.h): a failed trial that was
  // stopped, not wrong, is `retryable`; the trial that runs its parameters again names it in
  // `retry_of` and lists every trial of the chain, oldest first, in `retry_history` — Optuna's
  // system attributes "failed_trial" and "retry_history", as its RetryFailedTrialCallback
  // writes them.
  bool retryable = false;
  int64_t retry_of = -1;
  std::vector<int64_t> retry_history;
  // A trial an Optuna script put in the queue (study.enqueue_trial): WAITING in the storage
  // (shown as running here), with its "fixed_params" as JSON ({"num_layers": 4}). ask() runs it
  // before anything else.
  bool waiting = false;
  std::string fixed_params;
  int64_t trial_id = 0;  // the storage's key of the row
};

// The complete trial Optuna's study.best_trial returns among `trials`: the best value among the
// complete, feasible ones, the earliest on ties; null if there is none (Study::best; the
// Wilcoxon pruner's reference, search/wilcoxon.h).
const TrialRecord* best_complete(const std::vector<TrialRecord>& trials, Direction direction);

// What an objective returns: its value and any attributes worth keeping with the trial. A
// study of several objectives reads `values` (one per objective, in the study's order) instead.
struct Outcome {
  double value = 0;
  std::map<std::string, std::string> attrs;
  TrialState state = TrialState::complete;  // or pruned
  std::vector<double> values = {};  // several objectives: one value each (`value` unused then)
  // Constraints, name -> value, feasible when every value <= 0 (Optuna's trial.set_constraint;
  // Study::tell stores them): an infeasible trial is never the best, and TPE models it last.
  std::map<std::string, double> constraints = {};
};
using Objective = std::function<Outcome(const Params&, int64_t trial_number)>;

// A storage is a SQLite file (a path, or sqlite:///FILE) or a PostgreSQL database
// (postgresql://USER:PASSWORD@HOST:PORT/DB): search/study_store.h.
// For a SQLite storage: IoError naming the file unless it is a non-empty file that starts as a
// SQLite file does (what Study::load and mase-search --resume check before SQLite opens it, so
// nothing is written). Nothing to check for a URL (connecting says what is wrong).
void check_study_file(const std::string& storage);

// A worker beats every kHeartbeatInterval_s while a trial runs (search/heartbeat.h); resume
// counts a trial whose last beat is older than kHeartbeatGrace_s as its worker's death.
inline constexpr double kHeartbeatInterval_s = 10;
inline constexpr double kHeartbeatGrace_s = 60;

class Study {
 public:
  // Opens the study `name` in `storage`, creating the file (tables) and study if needed.
  // If the study exists, direction, sampler name and space must match what is stored
  // (ConfigError naming the first difference); a study an Optuna script made must have used
  // the space's distributions, and gets the sampler, seed and space recorded. IoError if the
  // storage cannot be opened or reached (no server, wrong password) or holds another Optuna
  // schema revision (nothing written then).
  static Study open(const std::string& storage, const std::string& name, Space space,
                    Direction direction, std::unique_ptr<Sampler> sampler, uint64_t seed);
  // A study of several objectives (Optuna's create_study(directions=[...])): one direction per
  // objective, which must match a stored study's. The sampler must rank several values
  // (tpe, tpe-independent, nsga2; random and grid ignore them): ConfigError before anything
  // is written otherwise.
  static Study open(const std::string& storage, const std::string& name, Space space,
                    std::vector<Direction> directions, std::unique_ptr<Sampler> sampler,
                    uint64_t seed);
  // Opens an existing study with the space, direction, sampler and seed it was created with
  // (to read it, plot it, or go on with it). A study an Optuna script made has no mase
  // record of these: its trials' distributions are the space, the sampler Optuna 5.0's
  // default (tpe, for one objective or several), the seed 0 — guesses, so nothing is
  // recorded: a later open() with the sampler the script really used is not refused.
  // ConfigError naming the studies the file has if there is no study `name`; IoError if the
  // file is missing, empty or not a study file (check_study_file).
  static Study load(const std::string& storage, const std::string& name);
  Study(Study&&) noexcept;
  Study& operator=(Study&&) noexcept;
  ~Study();

  // Marks as failed (and retryable: interrupted()) the running trials whose worker is gone;
  // returns how many. Gone: on this host, the pid it recorded names no process; on any host,
  // its last heartbeat (trial_heartbeats, search/heartbeat.h) is older than stale_after_s.
  // A trial with neither is left running.
  int resume(double stale_after_s = kHeartbeatGrace_s);
  // Refreshes trial `number`'s row in trial_heartbeats, as Optuna's record_heartbeat does (read
  // by resume and by Optuna's fail_stale_trials). ConfigError if the trial is not running.
  void heartbeat(int64_t number);
  // A new running trial — a trial an Optuna script enqueued (its fixed params, the sampler's
  // for the rest; it keeps its number; one fixing a value the space lacks is marked failed and
  // skipped, search/trial_queue.h), else the parameters of a retryable failed trial not yet
  // retried (lowest number first; Trial::retry_of names it), else the sampler's — or nullopt
  // when the sampler has nothing left (an exhausted grid) or, given a budget, when the study
  // already has `budget` trials finished (complete, pruned) or running. Counted in the same write transaction as the insert, so N processes sharing a
  // study with the same budget end with exactly `budget` finished trials, not N - 1 more
  // (a failed trial does not count: its place is asked for again).
  std::optional<Trial> ask(std::optional<int64_t> budget = std::nullopt);
  // Records the outcome of a running trial (ConfigError if it is not running). A study of
  // several objectives takes one value per objective (the single-value form is a ConfigError
  // there unless the trial failed or was pruned: then it keeps no value, as Optuna's pruned
  // trials of several objectives; and the other way round); a NaN among them fails the trial,
  // as in Optuna (a pruned trial told NaN, its last report, keeps no value at all: Optuna
  // gives it none).
  void tell(int64_t number, TrialState state, double value,
            const std::map<std::string, std::string>& attrs = {});
  void tell(int64_t number, TrialState state, const std::vector<double>& values,
            const std::map<std::string, std::string>& attrs = {});
  // What an objective returned: its values if it gave several, else its value; its
  // constraints first (set_constraint).
  void tell(int64_t number, const Outcome& outcome);
  // Records a running trial that was stopped before it finished (Ctrl-C): failed, with `why` as
  // its "error", and retryable — the next ask() (here or in any worker, e.g. after --resume)
  // runs the same parameters again as a new trial, before the sampler draws anything new, up to
  // kMaxRetries times. resume() does the same for a trial whose worker died. A trial that
  // failed by its own error (tell(failed)) is not retried: a grid hands its point out again,
  // random and TPE draw afresh, as in Optuna.
  void interrupted(int64_t number, const std::string& why);
  // Records the objective's value at `step` of a running trial (Optuna's trial.report; shown
  // by optuna-dashboard as the trial's curve). NaN and ±inf are kept as Optuna keeps them
  // (intermediate_value NULL, intermediate_value_type NAN, INF_POS or INF_NEG) and read back
  // as such by trials() and by Optuna; the pruner skips NaN as Optuna's does (search/pruner.h).
  // A step reported again keeps the last value (Optuna's trial.report would ignore it).
  // ConfigError if the trial is not running, or the study has several objectives (Optuna's
  // report raises there too: a pruner compares one value).
  void report(int64_t number, int64_t step, double value);
  // Optuna's trial.set_constraint for running trial `number`: the system attribute
  // "constraints:<name>" (ConfigError for a NaN value, or a trial that is not running). The
  // trial is feasible when every constraint is <= 0; best() and pareto_front() take feasible
  // trials only, and TPE ranks infeasible ones after every other (search/tpe.h).
  void set_constraint(int64_t number, const std::string& name, double value);
  // Records running trial `number`'s value at successive halving's rung `rung`: the trial
  // system attribute "completed_rung_<rung>" Optuna's SuccessiveHalvingPruner writes, which
  // every worker's pruner then compares with (search/halving.h). ConfigError if the trial is
  // not running.
  void record_rung(int64_t number, int rung, double value);
  // ask -> objective -> tell, n_trials times or until the sampler is exhausted; an exception
  // from the objective marks that trial failed (its message kept as attribute "error") and the
  // loop goes on; so does an outcome with the wrong number of values (as Optuna's). on_trial
  // (optional) is called after each trial, for progress output.
  void optimize(const Objective& objective, int n_trials,
                const std::function<void(const TrialRecord&)>& on_trial = {});

  std::vector<TrialRecord> trials() const;    // by number
  // The best complete trial, per direction, among the feasible ones (ConfigError for a study
  // of several objectives, which has a front instead, as Optuna's best_trial raises).
  std::optional<TrialRecord> best() const;
  // The feasible complete trials no other such trial dominates (search/nsga2.h), by number:
  // Optuna's best_trials. For one objective, every trial tied for the best. A complete trial
  // missing one of its value rows (a damaged file: Optuna cannot read it) is left out.
  std::vector<TrialRecord> pareto_front() const;
  // One row per trial: number, state, value (several objectives: values_<name> for each, the
  // names of set_metric_names, else values_0, values_1, ...), each parameter (by name), each
  // attribute seen.
  void write_csv(const std::string& path) const;  // written to a temp name, then renamed

  const Space& space() const { return space_; }
  const std::string& name() const { return name_; }
  // The storage as given (with a URL's password: for reopening, never for printing), and
  // where it is for messages (the file, or the URL with its password as ***).
  const std::string& storage() const;
  const std::string& where() const;
  Direction direction() const { return directions_.front(); }  // objective 0's
  const std::vector<Direction>& directions() const { return directions_; }
  // Optuna's set_metric_names: one name per objective, stored with the study (shown by
  // optuna-dashboard, the CSV's column names); ConfigError if the count differs.
  void set_metric_names(const std::vector<std::string>& names);
  std::vector<std::string> metric_names() const;

 private:
  Study() = default;
  // open(); `adopt`: an Optuna script's study gets this sampler, seed and space recorded
  static Study open_study(const std::string& storage, const std::string& name, Space space,
                          std::vector<Direction> directions, std::unique_ptr<Sampler> sampler,
                          uint64_t seed, bool adopt);
  int64_t running_trial(int64_t number) const;  // its trial_id; ConfigError if not running
  // a system attribute of running trial `number` (JSON text), in its own write transaction
  void set_trial_attr(int64_t number, const std::string& key, const std::string& json,
                      const char* op);
  std::unique_ptr<store::Database> db_;
  int64_t study_id_ = 0;
  std::string name_;
  Space space_;
  std::vector<Direction> directions_ = {Direction::maximize};
  std::unique_ptr<Sampler> sampler_;
};

// One CSV field (RFC 4180): as it is, or in quotes with its quotes doubled when it holds a
// comma, a quote or a line break. Study::write_csv and the sweeps' CSVs write through it.
std::string csv_field(const std::string& s);

}  // namespace mase::search
