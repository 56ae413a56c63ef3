// search/lab_runner.h — what every lab command does around its trials: open its studies (all
// checked before any is changed), run trials until the budget is finished, write the CSVs.
//
// A lab command (search/lab_commands.h) runs one or more studies in one studies database:
// Lab 2.1 one per sampler, Lab 2.2 one per variant, Lab 3.2 one per format. Each study also
// stores an *objective key* — a JSON object of what its trials compute besides the space (the
// model, the budget, the compress config, the trained model of --init, ...) — in the table
//   study_objectives(name TEXT PRIMARY KEY, objective_json TEXT NOT NULL)
// of the same storage (plain mase-search stores its key there too). Reusing a study name with
// another space, sampler or objective key is a ConfigError naming the first difference; it is
// raised before any study of the command is created or changed. A study that already has trials
// continues only with --resume.
// Read next: search/lab_plot.h, search/lab_commands.h.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/study.h"

namespace mase::search {

struct LabStudy {
  std::string name;             // the study's name in the database
  std::string label;            // its curve's legend
  std::string sampler;          // random, grid, tpe, tpe-independent
  Space space;
  nlohmann::json objective;     // the objective key (see above)
  Direction direction = Direction::maximize;
  // Several objectives (search/nsga2.h): one direction and one metric name each (then
  // `direction` is unused); the trials' Outcome::values follow this order.
  std::vector<Direction> directions = {};
  std::vector<std::string> metric_names = {};
  std::vector<Direction> all_directions() const {
    return directions.empty() ? std::vector<Direction>{direction} : directions;
  }
};

struct LabRun {
  std::string db;               // <dir>/studies.db, or the --storage given
  std::string dir;              // CSVs go to <dir>/<study>.csv, trial runs to <dir>/<study>/
  int trials = 8;               // finished trials each study should have
  bool resume = false;
  uint64_t seed = 0;
  std::FILE* out = stdout;      // progress lines
};

// Opens (creating where needed) every study, after checking all of them: ConfigError naming
// the study and the key for a different space, sampler or objective, or for a study with trials
// and no --resume (and, with --resume, for none of them existing). With --resume, a missing,
// empty or damaged SQLite file is an IoError (check_study_file) before anything is created,
// and trials of dead workers are marked failed and retryable (Study::resume).
std::vector<Study> open_lab_studies(const std::vector<LabStudy>& specs, const LabRun& run);

// Runs trials of `study` until run.trials have finished or are running in other processes
// (or the sampler is exhausted, or Ctrl-C: train::stop_requested()), two progress lines each;
// three failures in a row end the search with an Error.
void run_lab_trials(Study& study, const Objective& objective, const LabRun& run);
// What a progress line ends with: "best 0.8125" (the best value so far), or for several
// objectives "front trials 3 7 9" (the Pareto front so far, Study::pareto_front).
std::string standing(const Study& study);
// run_lab_trials, then <dir>/<study>.csv written; returns its path.
std::string run_lab_study(Study& study, const Objective& objective, const LabRun& run);

// One trial: the objective, with a Heartbeat (search/heartbeat.h) beating while it runs so
// that a resume on another host can tell a live worker from a dead one; then tell (complete /
// pruned, or failed with attribute "error" when the objective throws: the search goes on); a
// trial stopped by Ctrl-C is recorded with Study::interrupted instead (failed and retryable).
struct TrialRun {
  bool ok = false;
  Outcome outcome;
  std::string error;
  double seconds = 0;
};
TrialRun run_one_trial(Study& study, const Objective& objective, const Trial& t);

// Complete trials of `study` (an existing one) in trial order.
std::vector<TrialRecord> completed(const std::vector<TrialRecord>& trials);

}  // namespace mase::search
