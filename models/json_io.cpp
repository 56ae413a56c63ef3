// models/json_io.cpp — see json_io.h.
#include "models/json_io.h"

#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace mase::nn {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) >= limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& path, const char* where) {
  MASE_CHECK(json_depth(text) <= kMaxJsonDepth, IoError, "[", where, "] ", path,
             ": expected JSON nested at most ", kMaxJsonDepth, " levels deep, got more (a corrupt "
             "or hostile file?)");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw IoError(cat("[", where, "] ", path, " is not valid JSON (", e.what(), ")"));
  }
}

nlohmann::json parse_json_file(const std::string& path, const char* where) {
  std::ifstream in(path, std::ios::binary);
  MASE_CHECK(in.good(), IoError, "[", where, "] cannot open ", path);
  std::ostringstream os;
  os << in.rdbuf();
  return parse_json_text(os.str(), path, where);
}

std::string brief(const nlohmann::json& v, size_t max_chars) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

}  // namespace mase::nn
