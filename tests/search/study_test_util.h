// tests/search/study_test_util.h — small helpers of the study tests: an exception's message,
// a substring test, a file's whole text, a statement or query run on a study file from
// outside, this machine's name.
#pragma once
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace mase::search::test_util {

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The whole text of a file ("" if it cannot be read): a CSV, a captured progress log.
inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A statement run on the file directly, the way a second tool (or a crash) would leave it.
inline void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO(sql << ": " << (err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

// One value of a raw query (the first column of the first row), "" if none.
inline std::string query_one(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

inline std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace mase::search::test_util
