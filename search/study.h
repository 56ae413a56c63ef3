// search/study.h — a study: a space, a sampler and every trial, kept in a SQLite file.
//
// The file is the study's only state (several processes on one study: search/workers.h). `ask` reads the history, lets the sampler propose, and
// inserts the new trial as `running` in one write transaction (BEGIN IMMEDIATE), so several
// processes can work on one study without two of them taking the same trial; `tell` records
// the outcome. A process that dies leaves its trials `running`: `resume()` marks those whose
// process is gone as failed (on this host: the pid no longer exists), and the grid sampler
// hands their points out again. Each trial stores its values as text (Param::format) under the
// parameter's name, its state, value, user attributes (model size, bits, ...), start and end
// times, and the pid and host that ran it.
//
// Tables (one file may hold several studies):
//   studies(id, name UNIQUE, direction, sampler, seed, space_json)
//   trials(id, study_id, number, state, value, started_at, ended_at, pid, host,
//          UNIQUE(study_id, number))
//   trial_params(trial_id, name, value_text)
//   trial_attrs(trial_id, name, value_text)
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/sampler.h"
#include "search/space.h"

struct sqlite3;

namespace mase::search {

enum class Direction { maximize, minimize };

// A trial as stored: the sampler's view plus what the study records about it.
struct TrialRecord {
  Trial trial;  // value as the objective returned it (not negated)
  std::map<std::string, std::string> attrs;
  std::string started_at, ended_at;  // ISO 8601 UTC; ended_at empty while running
  int64_t pid = 0;
  std::string host;
};

// What an objective returns: its value and any attributes worth keeping with the trial.
struct Outcome {
  double value = 0;
  std::map<std::string, std::string> attrs;
  TrialState state = TrialState::complete;  // or pruned
};
using Objective = std::function<Outcome(const Params&, int64_t trial_number)>;

class Study {
 public:
  // Opens the study `name` in the SQLite file at `path`, creating file and study if needed.
  // If the study exists, direction, sampler name and space must match what is stored
  // (ConfigError naming the first difference). IoError if the file cannot be opened.
  static Study open(const std::string& path, const std::string& name, Space space,
                    Direction direction, std::unique_ptr<Sampler> sampler, uint64_t seed);
  // Opens an existing study with the space, direction, sampler and seed it was created with
  // (to read it, plot it, or go on with it). ConfigError naming the studies the file has if
  // there is no study `name`; IoError if there is no file.
  static Study load(const std::string& path, const std::string& name);
  Study(Study&&) noexcept;
  Study& operator=(Study&&) noexcept;
  ~Study();

  // Marks as failed the running trials whose process is gone; returns how many.
  int resume();
  // A new running trial, or nullopt when the sampler has nothing left (an exhausted grid) or,
  // given a budget, when the study already has `budget` trials finished (complete, pruned) or
  // running. Counted in the same write transaction as the insert, so N processes sharing a
  // study with the same budget end with exactly `budget` finished trials, not N - 1 more
  // (a failed trial does not count: its place is asked for again).
  std::optional<Trial> ask(std::optional<int64_t> budget = std::nullopt);
  // Records the outcome of a running trial (ConfigError if it is not running).
  void tell(int64_t number, TrialState state, double value,
            const std::map<std::string, std::string>& attrs = {});
  // ask -> objective -> tell, n_trials times or until the sampler is exhausted; an exception
  // from the objective marks that trial failed (its message kept as attribute "error") and the
  // loop goes on. on_trial (optional) is called after each trial, for progress output.
  void optimize(const Objective& objective, int n_trials,
                const std::function<void(const TrialRecord&)>& on_trial = {});

  std::vector<TrialRecord> trials() const;    // by number
  std::optional<TrialRecord> best() const;    // best complete trial, per direction
  // One row per trial: number, state, value, each parameter (by name), each attribute seen.
  void write_csv(const std::string& path) const;  // written to a temp name, then renamed

  const Space& space() const { return space_; }
  const std::string& name() const { return name_; }
  std::string path() const;  // the SQLite file
  Direction direction() const { return direction_; }

 private:
  Study() = default;
  sqlite3* db_ = nullptr;
  int64_t study_id_ = 0;
  std::string name_;
  Space space_;
  Direction direction_ = Direction::maximize;
  std::unique_ptr<Sampler> sampler_;
};

}  // namespace mase::search
