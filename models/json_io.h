// models/json_io.h — reading JSON that may be hostile: nesting bounded before parsing, errors
// that name the file, and values shown in messages clipped to one short line.
//
// nlohmann's dump() recurses once per nesting level, so a 100,000-level value in an error
// message overflowed the stack; every JSON file the project reads (safetensors headers,
// config.json, run folders' state, quant/prune configs) goes through parse_json_text or
// parse_json_file, which refuse more than kMaxJsonDepth levels before nlohmann sees the text.
// Used by models/, train/, quant/ and search/ (the lowest layer that reads JSON is models/).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace mase::nn {

constexpr int kMaxJsonDepth = 64;  // our files nest 4 levels; HF configs fewer than 8

// Deepest nesting of [ and { in `text` (strings skipped); stops counting past `limit`.
int json_depth(std::string_view text, int limit = kMaxJsonDepth + 1);

// Parse `text` read from `path`: IoError "[where] path: ..." when it nests too deeply or is not
// valid JSON. `where` is the caller's tag, e.g. "load_config".
nlohmann::json parse_json_text(std::string_view text, const std::string& path, const char* where);
// Read the whole file at `path` and parse it as above (IoError when it cannot be opened).
nlohmann::json parse_json_file(const std::string& path, const char* where);

// `v` as compact JSON, clipped to `max_chars` ("..." appended): for error messages.
std::string brief(const nlohmann::json& v, size_t max_chars = 60);

}  // namespace mase::nn
