// search/space_json.h — a search space as JSON (the study system attribute "mase:space") and the
// words that say how two spaces differ (the message of a refused reopen).
//
// A space is a list of parameters sorted by name, each {"name", "kind" (categorical, integer,
// real), "choices", "low", "high", "step", "log"}: mase's own record of the space, kept beside
// Optuna's per-trial distribution_json (search/optuna_format.h) because a study must know its
// space before its first trial. Read next: search/study.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "search/space.h"

namespace mase::search {

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string shortest_text(double v);
nlohmann::json param_to_json(const Param& p);
nlohmann::json space_to_json(const Space& space);
// The inverse of space_to_json; nlohmann::json::exception if a field is missing, ConfigError
// from the builders if a range is not one (or an integer field is not within ±2^53).
Space space_from_json(const nlohmann::json& params);
// One parameter in words: "layers: integer [2, 8] step 1", "act: categorical {relu, gelu}".
std::string describe(const nlohmann::json& p);
// How the stored space differs from the given one, in words; "" if they are the same. IoError
// when `stored` (read from a database) is not a list of parameters as space_to_json writes.
std::string space_difference(const nlohmann::json& stored, const nlohmann::json& given);

}  // namespace mase::search
