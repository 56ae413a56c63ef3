// search/space.cpp — search-space parameters: builders, checks, and the internal form's text.
// Read search/space.h first.
#include "search/space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/utf8.h"
#include "runtime/error.h"

namespace mase::search {

int64_t Param::cardinality() const {
  switch (kind) {
    case Kind::categorical: return static_cast<int64_t>(choices.size());
    case Kind::integer: return static_cast<int64_t>(std::floor((high - low) / step)) + 1;
    case Kind::real: return 0;
  }
  return 0;
}

std::string Param::format(double v) const {
  switch (kind) {
    case Kind::categorical: return choices.at(static_cast<size_t>(v));
    case Kind::integer: return std::to_string(static_cast<int64_t>(std::llround(v)));
    case Kind::real: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);  // exact: a study read back is the same study
      return buf;
    }
  }
  return {};
}

double Param::parse(const std::string& text) const {
  if (kind == Kind::categorical) {
    auto it = std::find(choices.begin(), choices.end(), text);
    MASE_CHECK(it != choices.end(), ConfigError, "[space] parameter '", name,
               "' expected one of its choices, got '", text, "'");
    return static_cast<double>(it - choices.begin());
  }
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  MASE_CHECK(!text.empty() && end && *end == '\0' && contains(v), ConfigError, "[space] parameter '",
             name, "' expected a value in [", low, ", ", high, "], got '", text, "'");
  return v;
}

bool Param::contains(double v) const {
  if (!std::isfinite(v)) return false;
  switch (kind) {
    case Kind::categorical:
      return v >= 0 && v < static_cast<double>(choices.size()) && v == std::floor(v);
    case Kind::integer: {
      double k = (v - low) / step;
      return v >= low && v <= high && k == std::floor(k);
    }
    case Kind::real: return v >= low && v <= high;
  }
  return false;
}

namespace {

// Names and choices are stored in a study as JSON text, which is UTF-8: a byte that is not
// (a --space typed in a Latin-1 terminal) would fail when the study is written.
void check_utf8(const std::string& text, const std::string& what) {
  for (size_t i = 0; i < text.size();) {
    const data::Utf8Prefix u = data::utf8_prefix(text, i);
    if (!u.well_formed()) {
      std::string shown;
      data::sanitize_utf8(text.substr(0, 60), shown);
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[i]));
      throw ConfigError(cat("[space] expected ", what, " in UTF-8 (a study stores it as JSON), ",
                            "got the byte ", byte, " at offset ", i, " of '", shown,
                            text.size() > 60 ? "...'" : "'"));
    }
    i += static_cast<size_t>(u.len);
  }
}

}  // namespace

void Space::add(Param p) {
  auto it = std::lower_bound(params_.begin(), params_.end(), p.name,
                             [](const Param& a, const std::string& n) { return a.name < n; });
  MASE_CHECK(!p.name.empty(), ConfigError, "[space] expected a parameter name, got an empty one");
  MASE_CHECK(it == params_.end() || it->name != p.name, ConfigError, "[space] parameter '", p.name,
             "' declared twice");
  params_.insert(it, std::move(p));
}

Space& Space::categorical(const std::string& name, std::vector<std::string> choices) {
  check_utf8(name, "a parameter name");
  for (const std::string& c : choices) check_utf8(c, cat("parameter '", name, "' choices"));
  MASE_CHECK(!choices.empty(), ConfigError, "[space] parameter '", name,
             "' expected at least one choice, got none");
  for (size_t i = 0; i < choices.size(); ++i)
    for (size_t j = i + 1; j < choices.size(); ++j)
      MASE_CHECK(choices[i] != choices[j], ConfigError, "[space] parameter '", name,
                 "' lists the choice '", choices[i], "' twice");
  Param p;
  p.name = name;
  p.kind = Param::Kind::categorical;
  p.choices = std::move(choices);
  add(std::move(p));
  return *this;
}

Space& Space::integer(const std::string& name, int64_t low, int64_t high, int64_t step, bool log) {
  check_utf8(name, "a parameter name");
  // a Param keeps its bounds as doubles, exact up to 2^53 (and high - low cannot overflow)
  constexpr int64_t kExact = int64_t{1} << 53;
  MASE_CHECK(std::llabs(low) <= kExact && std::llabs(high) <= kExact && step <= kExact, ConfigError,
             "[space] parameter '", name, "' expected bounds and step within ±2^53, got [", low,
             ", ", high, "] step ", step);
  MASE_CHECK(low <= high, ConfigError, "[space] parameter '", name, "' expected low <= high, got ",
             low, " > ", high);
  MASE_CHECK(step >= 1, ConfigError, "[space] parameter '", name, "' expected step >= 1, got ", step);
  MASE_CHECK(!log || (low >= 1 && step == 1), ConfigError, "[space] parameter '", name,
             "' is log-scaled: expected low >= 1 and step 1, got low ", low, ", step ", step);
  Param p;
  p.name = name;
  p.kind = Param::Kind::integer;
  p.low = static_cast<double>(low);
  // The largest value on the step grid, so that high is always a value the parameter can take.
  p.high = static_cast<double>(low + (high - low) / step * step);
  p.step = static_cast<double>(step);
  p.log = log;
  add(std::move(p));
  return *this;
}

Space& Space::real(const std::string& name, double low, double high, bool log) {
  check_utf8(name, "a parameter name");
  MASE_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high, ConfigError,
             "[space] parameter '", name, "' expected finite low <= high, got [", low, ", ", high, "]");
  MASE_CHECK(!log || low > 0, ConfigError, "[space] parameter '", name,
             "' is log-scaled: expected low > 0, got ", low);
  // the samplers draw low + u·(high − low): a width beyond double's range would make every
  // draw high (or NaN)
  MASE_CHECK(log || std::isfinite(high - low), ConfigError, "[space] parameter '", name,
             "' expected a finite width high - low, got [", low, ", ", high,
             "] (narrow it, or use a log scale for a positive range)");
  Param p;
  p.name = name;
  p.kind = Param::Kind::real;
  p.low = low;
  p.high = high;
  p.log = log;
  add(std::move(p));
  return *this;
}

const Param& Space::at(const std::string& name) const {
  for (const Param& p : params_)
    if (p.name == name) return p;
  std::string known;
  for (const Param& p : params_) known += (known.empty() ? "" : ", ") + p.name;
  throw ConfigError(cat("[space] no parameter '", name, "' (the space has: ", known, ")"));
}

int64_t Space::grid_size() const {
  for (const Param& p : params_)
    if (p.cardinality() == 0) return 0;
  int64_t n = 1;
  for (const Param& p : params_) {
    const int64_t c = p.cardinality();  // >= 1
    if (n > INT64_MAX / c) return INT64_MAX;  // the product would overflow (found by fuzz/)
    n *= c;
  }
  return n;
}

std::string Space::format(const Values& values) const {
  std::string out;
  for (const Param& p : params_) {
    auto it = values.find(p.name);
    if (it == values.end()) continue;
    out += (out.empty() ? "" : " ") + p.name + "=" + p.format(it->second);
  }
  return out;
}

double Params::raw(const std::string& name, Param::Kind kind) const {
  const Param& p = space_->at(name);
  bool ok = p.kind == kind || (kind == Param::Kind::real && p.kind == Param::Kind::integer);
  static const char* kNames[] = {"categorical", "integer", "real"};
  MASE_CHECK(ok, ConfigError, "[params] parameter '", name, "' is ", kNames[int(p.kind)],
             ", read as ", kNames[int(kind)]);
  auto it = values_.find(name);
  MASE_CHECK(it != values_.end(), ConfigError, "[params] the trial has no value for '", name, "'");
  return it->second;
}

const std::string& Params::category(const std::string& name) const {
  double v = raw(name, Param::Kind::categorical);
  return space_->at(name).choices.at(static_cast<size_t>(v));
}

int64_t Params::integer(const std::string& name) const {
  return static_cast<int64_t>(std::llround(raw(name, Param::Kind::integer)));
}

double Params::real(const std::string& name) const { return raw(name, Param::Kind::real); }

}  // namespace mase::search
