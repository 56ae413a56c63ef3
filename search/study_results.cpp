// search/study_results.cpp — reading a study's results: its trials, the best trial (one
// objective) or the Pareto front (several), the metric names, the CSV. Read search/study.h
// first; opening and the trial life cycle are search/study.cpp.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "search/nsga2.h"
#include "search/space_json.h"
#include "search/study.h"
#include "search/study_rows.h"
#include "search/study_store.h"

namespace mase::search {

namespace {

using nlohmann::json;
using store::Statement;
using store::Transaction;
using namespace rows;

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

const std::string& Study::storage() const { return db_->storage(); }
const std::string& Study::where() const { return db_->where(); }

std::vector<TrialRecord> Study::trials() const { return load_trials(*db_, study_id_, space_); }

const TrialRecord* best_complete(const std::vector<TrialRecord>& trials, Direction direction) {
  const TrialRecord* best = nullptr;
  for (const TrialRecord& r : trials) {
    if (r.trial.state != TrialState::complete || violation(r.trial) > 0) continue;
    if (!best || (direction == Direction::maximize ? r.trial.value > best->trial.value
                                                   : r.trial.value < best->trial.value))
      best = &r;
  }
  return best;
}

std::optional<TrialRecord> Study::best() const {
  MASE_CHECK(directions_.size() == 1, ConfigError, "[study] study '", name_, "' has ",
             directions_.size(), " objectives: no single best trial (its Pareto front instead)");
  const std::vector<TrialRecord> all = trials();
  const TrialRecord* best = best_complete(all, direction());  // a tie keeps the earlier trial
  return best ? std::optional<TrialRecord>(*best) : std::nullopt;
}

std::vector<TrialRecord> Study::pareto_front() const {
  std::vector<TrialRecord> done;
  std::vector<nsga2::Point> points;
  for (TrialRecord& r : trials())
    if (r.trial.state == TrialState::complete && violation(r.trial) <= 0 &&
        nsga2::has_every_value(r.trial.objectives, directions_.size())) {
      points.push_back(r.trial.objectives);
      done.push_back(std::move(r));
    }
  std::vector<TrialRecord> front;
  if (done.empty()) return front;
  // front 0 only (this runs after every trial, for the progress line)
  const std::vector<std::vector<size_t>> fronts = nsga2::fronts(points, directions_, 1);
  for (size_t i : fronts.front()) front.push_back(std::move(done[i]));
  return front;
}

void Study::set_metric_names(const std::vector<std::string>& names) {
  MASE_CHECK(names.size() == directions_.size(), ConfigError, "[study] study '", name_,
             "' expected ", directions_.size(), " metric names (one per objective), got ",
             names.size());
  Transaction tx(*db_);
  Statement ins(*db_,
                "INSERT INTO study_system_attributes(study_id, key, value_json) "
                "VALUES(?1, 'study:metric_names', ?2) ON CONFLICT(study_id, key) DO UPDATE "
                "SET value_json = excluded.value_json",
                "write study attributes");
  ins.bind(1, study_id_).bind(2, json(names).dump()).run();
  tx.commit();
}

std::vector<std::string> Study::metric_names() const { return rows::metric_names(*db_, study_id_); }

void Study::write_csv(const std::string& path) const {
  const std::vector<TrialRecord> all = trials();
  std::set<std::string> attr_names;  // sorted: the columns do not depend on trial order
  std::set<std::string> constraint_names;  // Optuna's trials_dataframe: one column "constraints"
  for (const TrialRecord& r : all) {
    for (const auto& [name, text] : r.attrs) attr_names.insert(name);
    for (const auto& [name, v] : r.trial.constraints) constraint_names.insert(name);
  }

  // Each cell is preceded by its comma; the first cell of a line (number) has none.
  std::string text = "number,state";
  auto cell = [&text](const std::string& field) { (text += ',') += csv_field(field); };
  const size_t m = directions_.size();
  if (m == 1) {
    cell("value");
  } else {  // Optuna's trials_dataframe names them so: values_<metric name> or values_<k>
    const std::vector<std::string> names = metric_names();
    for (size_t k = 0; k < m; ++k)
      cell("values_" + (names.size() == m ? names[k] : std::to_string(k)));
  }
  for (const Param& p : space_.params()) cell(p.name);
  for (const std::string& a : attr_names) cell(a);
  for (const std::string& c : constraint_names) cell("constraint_" + c);  // feasible when <= 0
  text += '\n';
  for (const TrialRecord& r : all) {
    const Trial& t = r.trial;
    // a value as stored (objectives[0] is `value`); none for a failed trial, or a pruned one
    // that kept none (pruned at a NaN report, or in a study of several objectives)
    bool has_value = t.state == TrialState::complete || t.state == TrialState::pruned;
    text += std::to_string(t.number);
    cell(to_string(t.state));
    for (size_t k = 0; k < m; ++k)
      cell(has_value && k < t.objectives.size() ? shortest_text(t.objectives[k]) : "");
    for (const Param& p : space_.params()) {
      auto it = t.values.find(p.name);
      cell(it == t.values.end() ? "" : p.format(it->second));
    }
    for (const std::string& a : attr_names) {
      auto it = r.attrs.find(a);
      cell(it == r.attrs.end() ? "" : it->second);
    }
    for (const std::string& c : constraint_names) {
      auto it = t.constraints.find(c);
      cell(it == t.constraints.end() ? "" : shortest_text(it->second));
    }
    text += '\n';
  }

  // whole or not at all: a reader never sees half a CSV (runtime/atomic_file.h)
  write_text_atomic(path, text);
}

}  // namespace mase::search
