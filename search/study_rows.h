// search/study_rows.h — one study's rows in Optuna's tables (search/optuna_schema.h), read and
// written for search/study.cpp: the study's system attributes (mase's sampler, seed, space),
// its direction, the distributions its trials used, its trials with everything attached to
// them, and trial attributes. Callers hold the transaction; values are always bound.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "search/space.h"
#include "search/study.h"

namespace mase::search::store {
class Database;
}

namespace mase::search::rows {

// A study system attribute's value_json, or nullopt if the study has none by that key.
std::optional<std::string> system_attr(store::Database& db, int64_t study_id, const char* key);
// mase:sampler, mase:seed (decimal text) and mase:space, written or replaced.
void set_system_attrs(store::Database& db, int64_t study_id, const std::string& sampler, uint64_t seed,
                      const nlohmann::json& space);
// The study's directions, objective 0 first ("MAXIMIZE" or "MINIMIZE" each); ConfigError
// (`where` + what is wrong) if it has none or another word.
std::vector<Direction> stored_directions(store::Database& db, int64_t study_id,
                                         const std::string& where);
// Optuna's "study:metric_names" (set_metric_names): one name per objective, or none.
std::vector<std::string> metric_names(store::Database& db, int64_t study_id);
// Every distribution the study's trials used, one per parameter name, by name. ConfigError if
// trials used two different distributions for one name (Optuna allows changing float ranges).
std::vector<Param> distributions(store::Database& db, int64_t study_id);
// The trials of a study (or only trial `number`), by number, with params (those in `space`),
// value and every objective's value, user attributes, pid and host, intermediate values,
// NSGA-II's generation.
std::vector<TrialRecord> load_trials(store::Database& db, int64_t study_id, const Space& space,
                                     std::optional<int64_t> number = std::nullopt);
// Text attributes as JSON strings, replacing those of the same name.
void insert_attrs(store::Database& db, int64_t trial_id, const std::map<std::string, std::string>& attrs,
                  const char* table = "trial_user_attributes");

}  // namespace mase::search::rows
