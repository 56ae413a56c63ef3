// search/text.h — the one text helper the search's flag parsers share (sweep_list.cpp's lists,
// command_objective.cpp's --space): a string without the spaces and tabs around it.
#pragma once
#include <string>

namespace mase::search {

// " x=int:1:3 " -> "x=int:1:3"; all blanks -> "".
inline std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace mase::search
