// search/optuna_format.h — how mase's study values are written in Optuna's RDB storage.
//
// A study file holds Optuna's tables (search/optuna_schema.h); these are the conversions
// between what mase keeps (search/space.h, search/sampler.h) and what Optuna writes there:
//   a parameter        <-> distribution_json, e.g. {"name": "IntDistribution", "attributes":
//                          {"log": false, "step": 1, "low": 2, "high": 8}}; a choice that reads
//                          as a number ("128") is written as one, so Python sees 128
//   a trial state      <-> RUNNING, COMPLETE, PRUNED, FAIL (WAITING, an enqueued trial that
//                          no worker took yet, reads as running)
//   a time             <-> "2026-11-25 03:21:53.632759" (SQLAlchemy's DateTime on SQLite, UTC);
//                          mase shows "2026-11-25T03:21:53Z"
//   an attribute       <-> value_json: mase's attributes are text, stored as JSON strings; an
//                          Optuna attribute that is not a string reads as its JSON text
// A value in trial_params is Optuna's internal form, which is mase's too: the choice's index
// for a categorical, the number for int and float.
// Read next: search/optuna_schema.h, search/study.cpp.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "search/sampler.h"
#include "search/space.h"

namespace mase::search::optuna {

// JSON text read from a study's database (anyone may have written it): parsed as
// nlohmann::json::parse does, after an IoError if it nests deeper than models/json_io.h's
// kMaxJsonDepth (comparing or printing a value recurses once per level).
nlohmann::json parse_stored(const std::string& text, const char* what);

// distribution_json of a parameter.
std::string distribution_json(const Param& p);
// The parameter `name` a distribution_json describes. ConfigError for a distribution mase has
// no parameter for (a FloatDistribution with a step) or text that is not a distribution.
Param param_from_distribution(const std::string& name, const std::string& json_text);
// Same kind, choices, range, step and log.
bool same_param(const Param& a, const Param& b);

const char* state_name(TrialState s);  // "COMPLETE", ...
// ConfigError naming the state if it is none of Optuna's.
TrialState state_from_name(const std::string& s);

std::string time_now();                          // "2026-11-25 03:21:53.632759", UTC
std::string iso_time(const std::string& stored);  // -> "2026-11-25T03:21:53Z"; "" stays ""
// A stored time as seconds since 1970-01-01 UTC, to the microsecond the column keeps
// ("2026-11-25 03:21:53.632759" or "2026-11-25T03:21:53Z"); NaN for "" or any other text.
double epoch_seconds(const std::string& stored);

std::string attr_json(const std::string& text);       // "a" -> "\"a\""
std::string attr_text(const std::string& value_json);  // "\"a\"" -> "a"; "1234" -> "1234"
// A float as Python's json.dumps writes it (what Optuna stores as a system attribute):
// shortest round trip, and Infinity / -Infinity / NaN, which JSON lacks and Python accepts.
std::string number_json(double v);      // 0.5 -> "0.5"; inf -> "Infinity"
double json_number(const std::string& text);  // the reverse; NaN for anything else

}  // namespace mase::search::optuna
