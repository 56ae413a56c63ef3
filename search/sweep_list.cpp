// search/sweep_list.cpp — parsing and checking a sweep's lists. Read sweep_list.h first.
#include "search/sweep_list.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "runtime/error.h"
#include "search/text.h"

namespace mase::search {
namespace {

// One number: the whole item must be read.
template <class T>
T number(const std::string& item, const std::string& flag, const std::string& what) {
  size_t used = 0;
  T v{};
  try {
    if constexpr (std::is_integral_v<T>) v = std::stoll(item, &used);
    else v = std::stod(item, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MASE_CHECK(used == item.size() && !item.empty(), ConfigError, "[", flag, "] expected ", what,
             ", got '", item, "'");
  if constexpr (!std::is_integral_v<T>)
    MASE_CHECK(std::isfinite(v), ConfigError, "[", flag, "] expected a finite number, got '",
               item, "'");
  return v;
}

// The items of a comma list, ranges expanded. T is int64_t or double.
template <class T>
std::vector<T> parse_list(const std::string& text, const std::string& flag, const char* what) {
  MASE_CHECK(!trimmed(text).empty(), ConfigError, "[", flag,
             "] expected at least one value, got an empty list (e.g. ",
             std::is_integral_v<T> ? "4..32 or 4,8,16" : "0.1..0.9:0.1 or 0.5", ")");
  std::vector<T> out;
  for (const std::string& item : split_items(text, ',', flag, what)) {
    const size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(number<T>(item, flag, what));
      continue;
    }
    const std::string hi_step = item.substr(dots + 2);
    const size_t colon = hi_step.find(':');
    const T lo = number<T>(item.substr(0, dots), flag, what);
    const T hi = number<T>(hi_step.substr(0, colon), flag, what);
    MASE_CHECK(std::is_integral_v<T> || colon != std::string::npos, ConfigError, "[", flag,
               "] expected a step in the range '", item, "' (e.g. ", item, ":0.1)");
    const T step = colon == std::string::npos ? T(1)
                                              : number<T>(hi_step.substr(colon + 1), flag, what);
    MASE_CHECK(step > 0, ConfigError, "[", flag, "] expected a step > 0 in '", item, "', got ",
               step);
    MASE_CHECK(lo <= hi, ConfigError, "[", flag, "] expected low <= high in '", item, "', got ",
               lo, " > ", hi);
    // Reals: the number of steps rounded, so 0.1..0.9:0.1 has its 9 values despite rounding.
    const auto n = static_cast<int64_t>(std::floor(double(hi - lo) / double(step) + 1e-9)) + 1;
    MASE_CHECK(n <= 10000, ConfigError, "[", flag, "] expected at most 10000 values, got ", n,
               " from '", item, "'");
    for (int64_t i = 0; i < n; ++i) {
      T v = lo + static_cast<T>(i) * step;
      if constexpr (!std::is_integral_v<T>) v = std::stod(format_real(v));
      out.push_back(v);
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MASE_CHECK(out[i] != out[j], ConfigError, "[", flag, "] expected each value once, got ",
                 out[i], " twice in '", text, "'");
  return out;
}

}  // namespace

std::string format_real(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag) {
  return parse_list<int64_t>(text, flag, "an integer or a range A..B[:STEP]");
}

std::vector<double> parse_real_list(const std::string& text, const std::string& flag) {
  return parse_list<double>(text, flag, "a number or a range A..B:STEP");
}

std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag,
                                         const std::vector<std::string>& known) {
  std::string choices;
  for (const std::string& k : known) choices += (choices.empty() ? "" : ", ") + k;
  MASE_CHECK(!trimmed(text).empty(), ConfigError, "[", flag,
             "] expected at least one of ", choices, ", got an empty list");
  std::vector<std::string> out;
  for (const std::string& item : split_items(text, ',', flag, "one of " + choices)) {
    MASE_CHECK(std::find(known.begin(), known.end(), item) != known.end(), ConfigError, "[",
               flag, "] expected one of ", choices, ", got '", item, "'");
    MASE_CHECK(std::find(out.begin(), out.end(), item) == out.end(), ConfigError, "[", flag,
               "] expected each name once, got '", item, "' twice");
    out.push_back(item);
  }
  return out;
}

std::string FracRule::str() const { return half ? "half" : std::to_string(fixed); }

FracRule parse_frac_rule(const std::string& text, const std::string& flag) {
  FracRule r;
  if (trimmed(text) == "half") {
    r.half = true;
    return r;
  }
  r.fixed = number<int64_t>(trimmed(text), flag, "a frac width (an integer) or 'half'");
  MASE_CHECK(r.fixed >= 0, ConfigError, "[", flag, "] expected a frac width >= 0, got ", r.fixed);
  return r;
}

void check_widths(const std::vector<int64_t>& widths, const FracRule& rule,
                  const std::string& widths_flag, const std::string& frac_flag) {
  for (int64_t w : widths) {
    MASE_CHECK(w <= 32, ConfigError, "[", widths_flag, "] expected widths <= 32, got ", w,
               " (fixed point here is at most 32 bits)");
    MASE_CHECK(w >= 2, ConfigError, "[", widths_flag, "] expected widths >= 2, got ", w,
               " (two's complement needs a sign bit and one more)");
    MASE_CHECK(rule.frac(w) <= w, ConfigError, "[", frac_flag, "] expected frac width <= width, ",
               "got frac width ", rule.frac(w), " at ", widths_flag, " ", w,
               " (drop the narrow widths or lower the frac width)");
  }
}

void check_sparsities(const std::vector<double>& sparsities, const std::string& flag) {
  for (double s : sparsities)
    MASE_CHECK(s >= 0.0 && s <= 1.0, ConfigError, "[", flag,
               "] expected sparsities in [0, 1], got ", s, " (the fraction of values pruned)");
}

}  // namespace mase::search
