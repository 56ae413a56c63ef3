// search/sweep_list.h — the lists a Lab 1 sweep is given on the command line, parsed and checked
// before anything is loaded or written.
//
//   integers  "4..32" (step 1), "4..32:4", "4,6,8", or a mix: "4..8,12,16..32:8"
//   reals     "0.1..0.9:0.1" (a range needs its step), "0.5", "0.25,0.5,0.75"
//   names     "random,l1-norm": each one of a known set
//   frac rule "4" (the same frac width at every width, the course's Q(w-4).4) or "half"
//             (frac = width / 2, rounded down: Q4.4, Q8.8, ...)
// Every error is a ConfigError naming the flag: "[--widths] expected ..., got ... (hint)". An
// empty list, a value given twice and a range that runs backwards are errors too: a sweep
// never silently does something other than what was asked.
// Read next: search/sweep_study.h (what a sweep does with its points).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mase::search {

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag);
std::vector<double> parse_real_list(const std::string& text, const std::string& flag);
// Each item must be one of `known`; the list keeps the order given.
std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag,
                                         const std::vector<std::string>& known);

// How a width sweep chooses each width's fractional width.
struct FracRule {
  bool half = false;   // frac = width / 2
  int64_t fixed = 4;   // otherwise this, at every width
  int64_t frac(int64_t width) const { return half ? width / 2 : fixed; }
  std::string str() const;  // "4" or "half"
};
FracRule parse_frac_rule(const std::string& text, const std::string& flag);

// Fixed point as quant/format.h allows it: 2 <= width <= 32 and frac <= width.
// ConfigError naming `widths_flag` (or `frac_flag` when the frac rule is what breaks it).
void check_widths(const std::vector<int64_t>& widths, const FracRule& rule,
                  const std::string& widths_flag, const std::string& frac_flag);
// Every sparsity in [0, 1].
void check_sparsities(const std::vector<double>& sparsities, const std::string& flag);

// A real as a short, exact-looking string: 0.1 -> "0.1", 0.30000000000000004 -> "0.3".
std::string format_real(double x);

}  // namespace mase::search
