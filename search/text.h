// search/text.h — the text helpers the search's flag parsers share (sweep_list.cpp's lists,
// command_objective.cpp's --space): trimming, clipping for a message, and splitting a list
// where an empty item — a comma too many, "4,8," or "a,,b" — is one error line naming its place,
// never an item silently dropped or kept.
#pragma once
#include <string>
#include <vector>

#include "runtime/error.h"

namespace mase::search {

// " x=int:1:3 " -> "x=int:1:3"; all blanks -> "".
inline std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// A flag's text in a message: its first 60 bytes (an argument may be long).
inline std::string clipped(const std::string& s) {
  return s.size() <= 60 ? s : s.substr(0, 60) + "...";
}

// Every piece between the `sep`s, empty ones included: "a::b:" -> {"a", "", "b", ""}; "" -> {}.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  for (size_t b = 0;;) {
    const size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

// The items of a list given to `flag`, each trimmed: " 4, 8 " -> {"4", "8"}; blank -> {} (the
// caller says what an empty list means). An empty item is a ConfigError saying what it should
// be (`what`) and where:
//   [--widths] expected an integer or a range A..B[:STEP] as item 3 of '4,8,', got an empty
//   item (drop the extra ',')
inline std::vector<std::string> split_items(const std::string& text, char sep,
                                            const std::string& flag, const std::string& what) {
  std::vector<std::string> out;
  if (trimmed(text).empty()) return out;
  for (const std::string& piece : split(text, sep)) {
    out.push_back(trimmed(piece));
    MASE_CHECK(!out.back().empty(), ConfigError, "[", flag, "] expected ", what, " as item ",
               out.size(), " of '", clipped(text), "', got an empty item (drop the extra '", sep,
               "')");
  }
  return out;
}

}  // namespace mase::search
