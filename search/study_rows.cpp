// search/study_rows.cpp — reading and writing one study's rows in Optuna's tables.
// Read search/study_rows.h first.
#include "search/study_rows.h"

#include <cmath>
#include <cstdlib>

#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/study_store.h"

namespace mase::search::rows {

using nlohmann::json;
using store::Database;
using store::Statement;

// --- study system attributes: mase's sampler, seed and space ---

std::optional<std::string> system_attr(Database& db, int64_t study_id, const char* key) {
  Statement q(db, "SELECT value_json FROM study_system_attributes WHERE study_id = ?1 AND key = ?2",
              "read study attributes");
  if (!q.bind(1, study_id).bind(2, std::string(key)).step()) return std::nullopt;
  return q.text(0);
}

void set_system_attrs(Database& db, int64_t study_id, const std::string& sampler, uint64_t seed,
                      const json& space) {
  Statement ins(db,
                "INSERT INTO study_system_attributes(study_id, key, value_json) "
                "VALUES(?1, ?2, ?3) ON CONFLICT(study_id, key) DO UPDATE "
                "SET value_json = excluded.value_json",
                "write study attributes");
  // The seed as decimal text: a JSON number would lose bits above 2^53 in Python.
  for (const auto& [key, value] : {std::pair<const char*, std::string>{"mase:sampler",
                                                                       json(sampler).dump()},
                                   {"mase:seed", json(std::to_string(seed)).dump()},
                                   {"mase:space", space.dump()}})
    ins.bind(1, study_id).bind(2, std::string(key)).bind(3, value).run();
}

std::vector<Direction> stored_directions(Database& db, int64_t study_id, const std::string& where) {
  Statement q(db, "SELECT direction FROM study_directions WHERE study_id = ?1 ORDER BY objective",
              "read study direction");
  q.bind(1, study_id);
  std::vector<Direction> dirs;
  while (q.step()) {
    const std::string d = q.text(0);
    MASE_CHECK(d == "MAXIMIZE" || d == "MINIMIZE", ConfigError, where, "direction '", d,
               "', expected MAXIMIZE or MINIMIZE");
    dirs.push_back(d == "MAXIMIZE" ? Direction::maximize : Direction::minimize);
  }
  MASE_CHECK(!dirs.empty(), ConfigError, where, "no direction (expected one per objective)");
  return dirs;
}

std::vector<std::string> metric_names(Database& db, int64_t study_id) {
  std::vector<std::string> names;
  if (auto text = system_attr(db, study_id, "study:metric_names")) {
    const json j = json::parse(*text, nullptr, false);
    if (j.is_array())
      for (const auto& n : j) names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  }
  return names;
}

// The space an Optuna script left: every distribution its trials used, one per name.
std::vector<Param> distributions(Database& db, int64_t study_id) {
  Statement q(db,
              "SELECT DISTINCT p.param_name, p.distribution_json FROM trial_params p "
              "JOIN trials t ON t.trial_id = p.trial_id WHERE t.study_id = ?1",
              "read distributions");
  q.bind(1, study_id);
  std::map<std::string, Param> by_name;  // the same distribution may be spelled two ways
  while (q.step()) {
    Param p = optuna::param_from_distribution(q.text(0), q.text(1));
    auto [it, fresh] = by_name.emplace(p.name, p);
    MASE_CHECK(fresh || optuna::same_param(it->second, p), ConfigError, "[study] parameter '",
               p.name, "' in ", db.where(), " expected one distribution, got trials with ",
               "two: ", optuna::distribution_json(it->second), " and ", q.text(1),
               " (mase searches one space: give the Optuna script fixed ranges)");
  }
  std::vector<Param> out;
  for (auto& [name, p] : by_name) out.push_back(std::move(p));
  return out;
}

// --- reading trials back ---

// The trials of a study (or only trial `number`), by number. One query per table (trials and
// their values, params, user attrs, system attrs, intermediate values), not one per trial.
std::vector<TrialRecord> load_trials(Database& db, int64_t study_id, const Space& space,
                                     std::optional<int64_t> number) {
  // "?2 < 0 OR number = ?2": one statement serves both "all trials" (-1) and "trial n".
  // Objective 0's value comes with the trial; every objective's (0 included) below.
  Statement rows(db,
                 "SELECT t.trial_id, t.number, t.state, v.value, v.value_type, t.datetime_start, "
                 "t.datetime_complete FROM trials t LEFT JOIN trial_values v "
                 "ON v.trial_id = t.trial_id AND v.objective = 0 "
                 "WHERE t.study_id = ?1 AND (?2 < 0 OR t.number = ?2) ORDER BY t.number",
                 "read trials");
  rows.bind(1, study_id);
  rows.bind(2, number.value_or(-1));
  std::vector<TrialRecord> out;
  std::map<int64_t, size_t> index_of_id;  // trials.trial_id -> position in `out`
  while (rows.step()) {
    TrialRecord r;
    r.trial.number = rows.int64(1);
    r.trial.state = optuna::state_from_name(rows.text(2));
    r.waiting = rows.text(2) == "WAITING";
    r.trial_id = rows.int64(0);
    const std::string type = rows.text(4);
    r.trial.value = type == "INF_POS"   ? INFINITY
                    : type == "INF_NEG" ? -INFINITY
                                        : (rows.is_null(3) ? 0.0 : rows.real(3));
    r.started_at = optuna::iso_time(rows.text(5));
    r.ended_at = optuna::iso_time(rows.text(6));
    r.start_s = optuna::epoch_seconds(rows.text(5));
    r.end_s = optuna::epoch_seconds(rows.text(6));
    index_of_id[rows.int64(0)] = out.size();
    out.push_back(std::move(r));
  }
  enum Table { params, user_attrs, system_attrs, intermediate, objectives };
  const char* sql[] = {"param_name, x.param_value FROM trial_params",
                       "key, x.value_json FROM trial_user_attributes",
                       "key, x.value_json FROM trial_system_attributes",
                       "step, x.intermediate_value, x.intermediate_value_type "
                       "FROM trial_intermediate_values",
                       "objective, x.value, x.value_type FROM trial_values"};
  for (int table : {params, user_attrs, system_attrs, intermediate, objectives}) {
    std::string q = cat("SELECT x.trial_id, x.", sql[table],
                        " x JOIN trials t ON t.trial_id = x.trial_id "
                        "WHERE t.study_id = ?1 AND (?2 < 0 OR t.number = ?2)");
    Statement named(db, q.c_str(), "read trials");
    named.bind(1, study_id);
    named.bind(2, number.value_or(-1));
    while (named.step()) {
      // A trial another worker inserted after the first query (each statement reads the
      // storage as of its own start): not in this list, so not read now.
      const auto at = index_of_id.find(named.int64(0));
      if (at == index_of_id.end()) continue;
      TrialRecord& r = out.at(at->second);
      if (table == objectives) {  // objective k's value (NULL with its kind for ±inf)
        const auto k = static_cast<size_t>(named.int64(1));
        const std::string type = named.text(3);
        if (r.trial.objectives.size() <= k) r.trial.objectives.resize(k + 1, NAN);
        r.trial.objectives[k] = type == "INF_POS"   ? INFINITY
                                : type == "INF_NEG" ? -INFINITY
                                                    : named.real(2);
        continue;
      }
      const std::string key = named.text(1);
      if (table == params) {
        // A parameter no longer in the space (open refused a space that disagrees) is left out.
        for (const Param& p : space.params())
          if (p.name == key) r.trial.values[key] = named.real(2);
      } else if (table == user_attrs) {
        r.attrs[key] = optuna::attr_text(named.text(2));
      } else if (table == intermediate) {
        // Optuna stores a non-finite report as NULL with its kind in the type column (what
        // its pruners and TPE then read back as NaN or ±inf, not 0)
        const std::string type = named.text(3);
        r.intermediate[named.int64(1)] =
            type == "NAN"       ? NAN
            : type == "INF_POS" ? INFINITY
            : type == "INF_NEG" ? -INFINITY
                                : named.real(2);
      } else if (key.rfind("constraints:", 0) == 0) {  // Optuna's set_constraint: 0.5
        r.trial.constraints[key.substr(12)] = optuna::json_number(named.text(2));
      } else if (key == "constraints") {  // its older constraints_func: [0.5, -1.0], named 0, 1
        const nlohmann::json c = nlohmann::json::parse(named.text(2), nullptr, false);
        if (c.is_array())
          for (size_t i = 0; i < c.size(); ++i)
            if (c[i].is_number())
              r.trial.constraints.emplace(std::to_string(i), c[i].get<double>());
      } else if (key.rfind("completed_rung_", 0) == 0) {  // successive halving's: 0.75
        r.rungs[std::atoi(key.c_str() + 15)] = optuna::json_number(named.text(2));
      } else if (key == "mase:pid") {
        r.pid = std::atoll(named.text(2).c_str());
      } else if (key == "mase:host") {
        r.host = optuna::attr_text(named.text(2));
      } else if (key == "fixed_params") {
        r.fixed_params = named.text(2);
      } else if (key == "NSGAIISampler:generation") {  // JSON: 2
        r.trial.generation = std::atoll(named.text(2).c_str());
      } else if (key == "mase:retry") {
        r.retryable = true;
      } else if (key == "failed_trial") {  // JSON: 3
        r.retry_of = std::atoll(named.text(2).c_str());
        r.trial.retry_of = r.retry_of;
      } else if (key == "retry_history") {  // JSON: [3, 7]
        const nlohmann::json h = nlohmann::json::parse(named.text(2), nullptr, false);
        if (h.is_array())
          for (const auto& n : h)
            if (n.is_number_integer()) r.retry_history.push_back(n.get<int64_t>());
      }
    }
  }
  return out;
}

void insert_attrs(Database& db, int64_t trial_id, const std::map<std::string, std::string>& attrs,
                  const char* table) {
  std::string sql =
      cat("INSERT INTO ", table, "(trial_id, key, value_json) VALUES(?1, ?2, ?3) "
          "ON CONFLICT(trial_id, key) DO UPDATE SET value_json = excluded.value_json");
  Statement ins(db, sql.c_str(), "write trial attributes");
  for (const auto& [name, text] : attrs)
    ins.bind(1, trial_id).bind(2, name).bind(3, optuna::attr_json(text)).run();
}

}  // namespace mase::search::rows
