// search/space_json.cpp — spaces to and from JSON, and how two differ. Read search/space_json.h.
#include "search/space_json.h"

#include <charconv>
#include <cmath>

namespace mase::search {

namespace {

using nlohmann::json;

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
      space.integer(name, std::llround(p.at("low").get<double>()),
                    std::llround(p.at("high").get<double>()),
                    std::llround(p.at("step").get<double>()), p.at("log").get<bool>());
    } else {
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

// Both lists are sorted by name (search/space.h), so one merge walk finds the first difference.
std::string space_difference(const json& stored, const json& given) {
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

}  // namespace mase::search
