// search/space_json.cpp — spaces to and from JSON, and how two differ. Read search/space_json.h.
#include "search/space_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "models/json_io.h"
#include "runtime/error.h"

namespace mase::search {

namespace {

using nlohmann::json;

// An integer field of a stored space: a whole number within ±2^53 (what a double holds
// exactly), else the ConfigError a bad range gets (llround of 1e300 is unspecified).
int64_t whole(const json& p, const char* key) {
  const double v = p.at(key).get<double>();
  MASE_CHECK(std::isfinite(v) && std::fabs(v) <= 9007199254740992.0, ConfigError,
             "[space] parameter '", p.at("name").get<std::string>(), "' expected an integer ", key,
             " within ±2^53, got ", v);
  return std::llround(v);
}

const char* kind_name(Param::Kind k) {
  switch (k) {
    case Param::Kind::categorical: return "categorical";
    case Param::Kind::integer: return "integer";
    case Param::Kind::real: return "real";
  }
  return "?";
}

}  // namespace

std::string shortest_text(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

json param_to_json(const Param& p) {
  return {{"name", p.name}, {"kind", kind_name(p.kind)}, {"choices", p.choices}, {"low", p.low},
          {"high", p.high}, {"step", p.step},            {"log", p.log}};
}

json space_to_json(const Space& space) {
  json params = json::array();
  for (const Param& p : space.params()) params.push_back(param_to_json(p));
  return params;
}

Space space_from_json(const json& params) {
  Space space;
  for (const json& p : params) {
    const std::string name = p.at("name").get<std::string>();
    const std::string kind = p.at("kind").get<std::string>();
    if (kind == "categorical") {
      space.categorical(name, p.at("choices").get<std::vector<std::string>>());
    } else if (kind == "integer") {
      // checked in this order (a function's arguments are evaluated in an unspecified order)
      const int64_t low = whole(p, "low"), high = whole(p, "high"), step = whole(p, "step");
      space.integer(name, low, high, step, p.at("log").get<bool>());
    } else {
      MASE_CHECK(kind == "real", ConfigError, "[space] parameter '", name, "' expected kind ",
                 "categorical, integer or real, got '", kind, "'");
      space.real(name, p.at("low").get<double>(), p.at("high").get<double>(),
                 p.at("log").get<bool>());
    }
  }
  return space;
}

std::string describe(const json& p) {
  std::string s = p.at("name").get<std::string>() + ": " + p.at("kind").get<std::string>();
  if (p.at("kind") == "categorical") {
    std::string list;
    for (const auto& c : p.at("choices")) list += (list.empty() ? "" : ", ") + c.get<std::string>();
    return s + " {" + list + "}";
  }
  s += " [" + shortest_text(p.at("low").get<double>()) + ", " +
       shortest_text(p.at("high").get<double>()) + "]";
  if (p.at("kind") == "integer") s += " step " + shortest_text(p.at("step").get<double>());
  return p.at("log").get<bool>() ? s + " log" : s;
}

namespace {

// Both lists are sorted by name (search/space.h), so one merge walk finds the first difference.
std::string first_parameter_difference(const json& stored, const json& given) {
  size_t i = 0, j = 0;
  while (i < stored.size() || j < given.size()) {
    if (j == given.size() || (i < stored.size() && stored[i].at("name") < given[j].at("name")))
      return "parameter " + describe(stored[i]) + ", which this space lacks";
    if (i == stored.size() || given[j].at("name") < stored[i].at("name"))
      return "no parameter " + given[j].at("name").get<std::string>() + ", which this space has";
    if (stored[i] != given[j])
      return "parameter " + describe(stored[i]) + ", not " + describe(given[j]);
    ++i, ++j;
  }
  return "";
}

}  // namespace

std::string space_difference(const json& stored, const json& given) {
  // `given` is a space this build made; `stored` comes from a database anyone may write
  MASE_CHECK(stored.is_array(), IoError, "[study] expected the stored space as a list of ",
             "parameters, got ", nn::brief(stored), " (was it written by mase?)");
  try {
    return first_parameter_difference(stored, given);
  } catch (const json::exception& e) {
    throw IoError(cat("[study] the stored space is not one mase writes: ", e.what(),
                      " (was it written by mase?)"));
  }
}

}  // namespace mase::search
