// search/lab_runner.cpp — open checked studies, run the trial loop, write CSVs. Read
// lab_runner.h first; tools/mase_search.cpp has the same loop for the plain Lab 2 search.
#include "search/lab_runner.h"

#include <chrono>
#include <filesystem>

#include "runtime/error.h"
#include "search/heartbeat.h"
#include "search/lab_fronts.h"
#include "search/study_store.h"
#include "search/trial_queue.h"
#include "train/trainer.h"

namespace mase::search {
namespace fs = std::filesystem;
using nlohmann::json;
using store::Statement;

namespace {

// The connection of the checks, closed when they are done.
struct Db {
  std::unique_ptr<store::Database> db;
  explicit Db(const std::string& path) : db(store::open_database(path)) {
    // under the write lock: concurrent CREATE ... IF NOT EXISTS can collide on PostgreSQL
    store::Transaction tx(*db);
    db->exec("CREATE TABLE IF NOT EXISTS study_objectives(name TEXT PRIMARY KEY, "
             "objective_json TEXT NOT NULL)",
             "create table study_objectives");
    tx.commit();
  }
};

bool study_exists(store::Database& db, const std::string& name) {
  // Optuna's studies table (search/study.h)
  Statement find(db, "SELECT study_id FROM studies WHERE study_name = ?1", "read study");
  return find.bind(1, name).step();
}

// "key 'max_steps' was 100, now 200" for the first top-level key that differs, else "".
std::string first_changed_key(const json& stored, const json& given) {
  for (auto it = given.begin(); it != given.end(); ++it)
    if (!stored.contains(it.key()) || stored[it.key()] != it.value())
      return cat("key '", it.key(), "' was ",
                 stored.contains(it.key()) ? stored[it.key()].dump() : std::string("unset"),
                 ", now ", it.value().dump());
  for (auto it = stored.begin(); it != stored.end(); ++it)
    if (!given.contains(it.key()))
      return cat("key '", it.key(), "' was ", it.value().dump(), ", now unset");
  return "";
}

void check_objective(store::Database& db, const LabStudy& s, const std::string& path) {
  Statement find(db, "SELECT objective_json FROM study_objectives WHERE name = ?1",
                 "read study objective");
  // no key recorded: a study an Optuna script (or a mase-search older than the keys) made
  if (!find.bind(1, s.name).step()) return;
  const std::string diff = first_changed_key(json::parse(find.text(0)), s.objective);
  MASE_CHECK(diff.empty(), ConfigError, "[search] study '", s.name, "' in ", path,
             " was run with another objective: ", diff,
             " (use the same flags with --resume, or another --study)");
}

int finished(const std::vector<TrialRecord>& trials) {
  int n = 0;
  for (const auto& r : trials)
    n += r.trial.state == TrialState::complete || r.trial.state == TrialState::pruned;
  return n;
}

}  // namespace

TrialRun run_one_trial(Study& study, const Objective& objective, const Trial& t) {
  const auto t0 = std::chrono::steady_clock::now();
  TrialRun r;
  try {
    r.outcome = [&] {  // beats while it runs: a resume on any host sees the worker alive
      Heartbeat beat(study, t.number);
      return objective(Params(study.space(), t.values), t.number);
    }();
    study.tell(t.number, r.outcome);
    r.ok = true;
  } catch (const std::exception& e) {  // the trial failed, not the search: recorded, go on
    r.error = e.what();
    // stopped by Ctrl-C: not the parameters' fault, so --resume runs them again first
    if (train::stop_requested()) study.interrupted(t.number, r.error);
    else study.tell(t.number, TrialState::failed, 0, {{"error", r.error}});
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<Study> open_lab_studies(const std::vector<LabStudy>& specs, const LabRun& run) {
  // what the flags alone decide, before a folder or a file exists: the sampler's name, and
  // whether a grid can walk the space (a continuous parameter, too many points)
  for (const LabStudy& s : specs)
    if (make_sampler(s.sampler, run.seed)->name() == "grid") GridSampler::check_space(s.space);
  // --resume continues a study file that is there: a missing, empty or damaged one is named in
  // one line before the folder is made or SQLite opens (and would create) the file
  if (run.resume) check_study_file(run.db);
  if (run.db.find("://") == std::string::npos)  // a file (not a server's URL): its folder
    fs::create_directories(fs::path(run.db).parent_path());
  {
    Db db(run.db);  // every check before any write
    std::string names;
    bool any = false;
    for (const LabStudy& s : specs) {
      names += (names.empty() ? "'" : ", '") + s.name + "'";
      any = any || study_exists(*db.db, s.name);
    }
    // --resume continues; with nothing to continue, a typo in --study or --dir (or another
    // --sampler, which names the study) would quietly start a new search
    MASE_CHECK(any || !run.resume, ConfigError, "[search] --resume: expected study ", names,
               " in ", db.db->where(), ", got none (drop --resume to start it, or check "
               "--study, --sampler and --dir)");
    for (const LabStudy& s : specs) {
      if (!study_exists(*db.db, s.name)) continue;
      Study existing = Study::open(run.db, s.name, s.space, s.all_directions(),
                                   make_sampler(s.sampler, run.seed), run.seed);
      check_objective(*db.db, s, db.db->where());
      const size_t n = existing.trials().size();
      MASE_CHECK(n == 0 || run.resume, ConfigError, "[search] study '", s.name, "' in ",
                 db.db->where(),
                 " already has ", n, " trials: add --resume to continue it, or pick another "
                 "--study");
    }
  }
  std::vector<Study> studies;
  Db db(run.db);
  for (const LabStudy& s : specs) {
    studies.push_back(Study::open(run.db, s.name, s.space, s.all_directions(),
                                  make_sampler(s.sampler, run.seed), run.seed));
    if (!s.metric_names.empty()) studies.back().set_metric_names(s.metric_names);
    Statement put(*db.db,
                  "INSERT INTO study_objectives(name, objective_json) VALUES(?1, ?2) "
                  "ON CONFLICT DO NOTHING",
                  "store study objective");
    put.bind(1, s.name).bind(2, s.objective.dump()).run();
    if (run.resume) {
      const int failed = studies.back().resume();
      const std::vector<TrialRecord> trials = studies.back().trials();
      const size_t again = retries_due(trials).size();
      size_t queued = 0;  // enqueued by an Optuna script (study.enqueue_trial)
      for (const TrialRecord& r : trials) queued += r.waiting;
      std::fprintf(run.out, "resume    %s: %d finished trials kept, %d of a dead process marked "
                   "failed%s%s\n", s.name.c_str(), finished(trials),
                   failed, queued ? cat(", ", queued, " queued by Optuna to run first").c_str() : "",
                   again ? cat(", ", again, " interrupted to run again first").c_str() : "");
    }
  }
  return studies;
}

std::string standing(const Study& study) {
  if (study.directions().size() > 1) {
    const std::vector<TrialRecord> front = study.pareto_front();
    std::string numbers;
    for (const TrialRecord& r : front) numbers += cat(numbers.empty() ? "" : " ", r.trial.number);
    return cat("front ", numbers.empty() ? std::string("(none yet)") : "trials " + numbers);
  }
  const auto best = study.best();  // a feasible one
  if (!best) return "best (none yet)";
  char text[48];
  std::snprintf(text, sizeof text, "best %.4f", best->trial.value);
  return text;
}

void run_lab_trials(Study& study, const Objective& objective, const LabRun& run) {
  constexpr int kMaxFailuresInARow = 3;
  int failures_in_a_row = 0;
  std::string last_error;
  while (finished(study.trials()) < run.trials && !train::stop_requested()) {
    MASE_CHECK(failures_in_a_row < kMaxFailuresInARow, Error, "[search] ", kMaxFailuresInARow,
               " trials in a row failed; the last: ", last_error,
               " (fix it, then continue with --resume)");
    std::optional<Trial> t = study.ask(run.trials);
    if (!t) break;  // the budget is finished or running elsewhere, or the grid is done
    const TrialRun tr = run_one_trial(study, objective, *t);
    std::string result = tr.ok ? cat("value ", tr.outcome.value) : cat("failed: ", tr.error);
    if (tr.ok && !tr.outcome.values.empty()) {  // several objectives
      result = "values";
      for (double v : tr.outcome.values)  // 1234567 parameters, not 1.23457e+06
        result += cat(result == "values" ? " " : ", ", value_text(v));
    }
    if (tr.ok && tr.outcome.state == TrialState::pruned) {
      const auto step = tr.outcome.attrs.find("pruned_at_step");
      result = cat("pruned", step == tr.outcome.attrs.end() ? "" : " at step " + step->second,
                   ", ", result);
    }
    for (const char* k : {"accuracy_trained", "accuracy_compressed", "accuracy_ptq",
                          "avg_weight_bits", "identity_layers"})
      if (tr.outcome.attrs.count(k)) result += cat("  ", k, " ", tr.outcome.attrs.at(k));
    for (const auto& [name, v] : tr.outcome.constraints)  // Optuna's set_constraint: <= 0 is ok
      if (v > 0) result += cat("  infeasible: ", name, " +", value_text(v));
    failures_in_a_row = tr.ok ? 0 : failures_in_a_row + 1;
    if (!tr.ok) last_error = tr.error;
    const double s = tr.seconds;
    std::string values = study.space().format(t->values);
    if (values.size() > 160) values = cat(values.substr(0, 150), " …");
    const std::string again =
        t->retry_of >= 0 ? cat("  (trial ", t->retry_of, " again: it was interrupted)") : "";
    std::fprintf(run.out, "%-18s trial %-3lld %s%s\n%-18s           %s  (%.1f s)  %s\n",
                 study.name().c_str(), static_cast<long long>(t->number), values.c_str(),
                 again.c_str(), "", result.c_str(), s, standing(study).c_str());
    std::fflush(run.out);
  }
}

std::string run_lab_study(Study& study, const Objective& objective, const LabRun& run) {
  run_lab_trials(study, objective, run);
  const std::string csv = (fs::path(run.dir) / (study.name() + ".csv")).string();
  study.write_csv(csv);
  return csv;
}

std::vector<TrialRecord> completed(const std::vector<TrialRecord>& trials) {
  std::vector<TrialRecord> out;
  for (const auto& r : trials)
    if (r.trial.state == TrialState::complete) out.push_back(r);
  return out;
}

}  // namespace mase::search
