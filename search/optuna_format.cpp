// search/optuna_format.cpp — parameters as Optuna's distribution JSON, Optuna's trial states,
// times and attribute values. Read search/optuna_format.h first.
#include "search/optuna_format.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "models/json_io.h"
#include "runtime/error.h"
#include "search/space_json.h"

namespace mase::search::optuna {

namespace {

using nlohmann::json;

// A choice as JSON: a number if the text is one exactly as it would be printed back
// ("128", "0.5"), else the text. So ["2", "4"] reaches Python as [2, 4], ["relu"] as ["relu"].
json choice_json(const std::string& c) {
  int64_t i = 0;
  auto [ie, iec] = std::from_chars(c.data(), c.data() + c.size(), i);
  if (iec == std::errc() && ie == c.data() + c.size() && std::to_string(i) == c) return i;
  double d = 0;
  auto [de, dec] = std::from_chars(c.data(), c.data() + c.size(), d);
  if (dec == std::errc() && de == c.data() + c.size() && std::isfinite(d) && shortest_text(d) == c)
    return d;
  return c;
}

// The inverse, for choices Optuna wrote: a number as its shortest text, True/False/None as
// Python prints them.
std::string choice_text(const std::string& name, const json& c) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_boolean()) return c.get<bool>() ? "True" : "False";
  if (c.is_null()) return "None";
  if (c.is_number_integer()) return c.dump();
  if (c.is_number_float()) return shortest_text(c.get<double>());
  // Optuna's choices are None, bool, int, float or str (CategoricalChoiceType)
  throw ConfigError(cat("[study] parameter '", name, "' expected choices that are None, bool, ",
                        "int, float or str, got ", nn::brief(c), " (was it written by Optuna?)"));
}

// An integer bound Optuna wrote: whole and within ±2^53 (llround of 1e300 is unspecified).
int64_t whole(const std::string& name, const char* key, double v) {
  MASE_CHECK(std::isfinite(v) && std::fabs(v) <= 9007199254740992.0 && v == std::round(v),
             ConfigError, "[study] parameter '", name, "' expected an integer ", key,
             " within ±2^53, got ", v);
  return std::llround(v);
}

// A stored text in a message: its first 120 characters.
std::string clipped(const std::string& text) {
  return text.size() <= 120 ? text : text.substr(0, 120) + "...";
}

}  // namespace

json parse_stored(const std::string& text, const char* what) {
  MASE_CHECK(nn::json_depth(text) <= nn::kMaxJsonDepth, IoError, "[study] expected ", what,
             " nested at most ", nn::kMaxJsonDepth, " levels deep, got more (a corrupt or "
             "hostile database?)");
  return json::parse(text);
}

std::string distribution_json(const Param& p) {
  json d;
  switch (p.kind) {
    case Param::Kind::categorical: {
      json choices = json::array();
      for (const std::string& c : p.choices) choices.push_back(choice_json(c));
      d = {{"name", "CategoricalDistribution"}, {"attributes", {{"choices", choices}}}};
      break;
    }
    case Param::Kind::integer:
      d = {{"name", "IntDistribution"},
           {"attributes",
            {{"log", p.log},
             {"step", std::llround(p.step)},
             {"low", std::llround(p.low)},
             {"high", std::llround(p.high)}}}};
      break;
    case Param::Kind::real:
      d = {{"name", "FloatDistribution"},
           {"attributes", {{"step", nullptr}, {"low", p.low}, {"high", p.high}, {"log", p.log}}}};
      break;
  }
  return d.dump();
}

Param param_from_distribution(const std::string& name, const std::string& json_text) {
  Param p;
  p.name = name;
  std::string kind;
  try {
    const json d = parse_stored(json_text, "a distribution_json");
    kind = d.at("name").get<std::string>();
    const json& a = d.at("attributes");
    auto num = [&a](const char* key, double otherwise) {
      return a.contains(key) && !a.at(key).is_null() ? a.at(key).get<double>() : otherwise;
    };
    // Optuna's names, and the ones its older versions wrote (still read by Optuna 5).
    // every distribution goes through the Space builders: the checks a mase space gets
    // (ranges, steps, log bounds, distinct choices) hold for an Optuna script's too
    Space one;
    if (kind == "CategoricalDistribution") {
      const json& choices = a.at("choices");
      MASE_CHECK(choices.is_array(), ConfigError, "[study] parameter '", name, "' expected a list ",
                 "of choices, got ", nn::brief(choices), " (was it written by Optuna?)");
      std::vector<std::string> texts;
      for (const json& c : choices) texts.push_back(choice_text(name, c));
      return one.categorical(name, std::move(texts)).params().front();
    }
    p.low = num("low", 0);
    p.high = num("high", 0);
    p.log = kind == "LogUniformDistribution" || kind == "IntLogUniformDistribution" ||
            (a.contains("log") && a.at("log").get<bool>());
    if (kind == "IntDistribution" || kind == "IntUniformDistribution" ||
        kind == "IntLogUniformDistribution") {
      // checked in this order (a function's arguments are evaluated in an unspecified order)
      const int64_t low = whole(name, "low", p.low), high = whole(name, "high", p.high),
                    step = whole(name, "step", num("step", 1));
      return one.integer(name, low, high, step, p.log).params().front();
    }
    const bool stepped = kind == "DiscreteUniformDistribution" ||
                         (kind == "FloatDistribution" && num("step", 0) != 0);
    if (!stepped && (kind == "FloatDistribution" || kind == "UniformDistribution" ||
                     kind == "LogUniformDistribution"))
      return one.real(name, p.low, p.high, p.log).params().front();
    if (stepped)
      throw ConfigError(cat("[study] parameter '", name, "' expected a distribution mase can "
                            "sample, got a float with a step: ", clipped(json_text),
                            " (make it an int or a categorical in both Optuna and mase)"));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(cat("[study] parameter '", name, "' expected Optuna's distribution_json, ",
                          "got ", clipped(json_text), ": ", e.what(),
                          " (was the file written by Optuna?)"));
  }
  throw ConfigError(cat("[study] parameter '", name, "' expected a known Optuna distribution, ",
                        "got ", kind, " (written by a newer Optuna?)"));
}

bool same_param(const Param& a, const Param& b) {
  return a.name == b.name && a.kind == b.kind && a.choices == b.choices && a.low == b.low &&
         a.high == b.high && a.step == b.step && a.log == b.log;
}

const char* state_name(TrialState s) {
  switch (s) {
    case TrialState::running: return "RUNNING";
    case TrialState::complete: return "COMPLETE";
    case TrialState::failed: return "FAIL";
    case TrialState::pruned: return "PRUNED";
  }
  return "?";
}

TrialState state_from_name(const std::string& s) {
  if (s == "WAITING") return TrialState::running;
  for (TrialState t : {TrialState::running, TrialState::complete, TrialState::failed,
                       TrialState::pruned})
    if (s == state_name(t)) return t;
  throw ConfigError(cat("[study] expected an Optuna trial state (RUNNING, COMPLETE, PRUNED, FAIL, "
                        "WAITING), got '", s, "' (written by a newer Optuna?)"));
}

std::string time_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const auto us = duration_cast<microseconds>(now.time_since_epoch()).count() % 1'000'000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + 19, sizeof buf - 19, ".%06lld", static_cast<long long>(us));
  return buf;
}

std::string iso_time(const std::string& stored) {
  if (stored.size() < 19) return stored;
  std::string s = stored.substr(0, 19);
  s[10] = 'T';
  return s + "Z";
}

double epoch_seconds(const std::string& stored) {
  std::tm tm{};
  char sep = 0;
  int consumed = 0;
  if (std::sscanf(stored.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &sep, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 7 ||
      (sep != ' ' && sep != 'T'))
    return NAN;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double fraction = 0, scale = 0.1;  // ".632759": the digits after the point, as many as kept
  size_t i = static_cast<size_t>(consumed);
  if (i < stored.size() && stored[i] == '.')
    for (++i; i < stored.size() && std::isdigit(static_cast<unsigned char>(stored[i])); ++i) {
      fraction += (stored[i] - '0') * scale;
      scale /= 10;
    }
  return static_cast<double>(timegm(&tm)) + fraction;
}

std::string attr_json(const std::string& text) { return json(text).dump(); }

std::string attr_text(const std::string& value_json) {
  if (nn::json_depth(value_json) > nn::kMaxJsonDepth) return value_json;  // shown as it is
  try {
    const json v = json::parse(value_json);
    return v.is_string() ? v.get<std::string>() : v.dump();
  } catch (const nlohmann::json::exception&) {
    return value_json;  // not JSON: shown as it is rather than lost
  }
}

std::string number_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::string s = shortest_text(v);  // the shortest exact form (space_json.h)
  // Python writes a whole float with ".0" (json.dumps(3.0) is "3.0"); both read back the same
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

double json_number(const std::string& text) {
  if (text == "Infinity") return INFINITY;
  if (text == "-Infinity") return -INFINITY;
  double v = NAN;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  return ec == std::errc() && ptr == end ? v : NAN;
}

}  // namespace mase::search::optuna
