// search/study_store.h — the thin layer between search/study.cpp and SQLite's C API.
//
// Three small RAII types, so that study.cpp reads as "what a study does" and not as SQLite
// bookkeeping: a Statement (a prepared statement: bind parameters, step through rows, always
// finalized), a Transaction (BEGIN IMMEDIATE ... COMMIT, rolled back if an exception leaves the
// scope first) and open_database (the file, its locking settings and Optuna's tables:
// search/optuna_schema.h).
// Every SQLite failure becomes a mase::IoError "[study] <op> on <file>: <sqlite message> (hint)".
// Values are always bound as parameters (?1, ?2, ...), never pasted into SQL text: a study or
// attribute name with a quote in it is just data.
#pragma once
#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace mase::search::store {

// Throws IoError for the last failure on `db` while doing `op` ("insert trial", ...).
[[noreturn]] void fail(sqlite3* db, const std::string& op);
// The file `db` was opened on (for messages).
std::string path_of(sqlite3* db);

// Opens (creating if needed) the study file at `path`: a 10 s busy timeout so that processes
// sharing the file wait for each other's write transactions instead of failing, and Optuna's
// tables (search/optuna_schema.h: created,
// checked, or migrated from mase's first schema). IoError if the file cannot be opened, is not
// a SQLite database, or is not a study file; such a file is left as it was.
sqlite3* open_database(const std::string& path);
// WAL journaling, so that readers never block the writer: set once the caller knows the file
// is its to change (a study opened, not refused), outside any transaction (SQLite's rule).
void use_wal(sqlite3* db);
// Runs SQL that returns nothing worth reading (PRAGMA, CREATE, BEGIN, ...).
void exec(sqlite3* db, const std::string& sql, const std::string& op);

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, std::string op);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameter i is ?i in the SQL (1-based, as SQLite counts).
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, const std::string& v);
  Statement& bind_null(int i);
  // Advances to the next row: true if there is one, false when the statement is done.
  bool step();
  // Runs a statement that returns no rows (INSERT, UPDATE), then resets it for reuse.
  void run();
  void reset();  // ready to step again with new bindings

  // Column i of the current row (0-based, as SQLite counts).
  bool is_null(int i) const;
  int64_t int64(int i) const;
  double real(int i) const;
  std::string text(int i) const;  // "" for NULL

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string op_;
};

// BEGIN IMMEDIATE takes the file's write lock at once (waiting up to the busy timeout), so
// that the reads inside the transaction cannot go stale before its writes: what makes ask()
// safe across processes. Not committed when the scope ends (an exception): rolled back.
class Transaction {
 public:
  explicit Transaction(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  sqlite3* db_;
  bool open_ = true;
};

// This machine's name (gethostname), "" if it has none.
std::string host_name();

}  // namespace mase::search::store
