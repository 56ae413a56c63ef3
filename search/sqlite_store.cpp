// search/sqlite_store.cpp — the SQLite backend of search/study_store.h: a study file, its
// statements (sqlite3_prepare_v2 / step), BEGIN IMMEDIATE, SQLite's messages with a hint.
#include <sqlite3.h>

#include "runtime/error.h"
#include "search/study_store.h"

namespace mase::search::store {

namespace {

// What to try next, by SQLite's primary result code.
const char* hint_for(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "another process held the study file locked for more than 10 s";
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return "the file is not a SQLite study file, or it is damaged";
    case SQLITE_CANTOPEN: return "does the directory exist, and may this user write there?";
    case SQLITE_READONLY:
    case SQLITE_PERM: return "the file or its directory is read-only";
    case SQLITE_FULL: return "the disk is full";
    case SQLITE_IOERR: return "a read or write of the file failed";
    case SQLITE_CONSTRAINT: return "a row broke a UNIQUE or NOT NULL rule of the schema";
    default: return "see the SQLite message";
  }
}

[[noreturn]] void fail(sqlite3* db, const std::string& where, const std::string& op) {
  throw IoError(cat("[study] ", op, " on ", where, ": ", sqlite3_errmsg(db), " (",
                    hint_for(sqlite3_extended_errcode(db)), ")"));
}

class SqliteCursor final : public Cursor {
 public:
  SqliteCursor(sqlite3* db, const std::string& where, const char* sql, std::string op)
      : db_(db), where_(where), op_(std::move(op)) {
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail(db_, where_, op_);
  }
  ~SqliteCursor() override { sqlite3_finalize(stmt_); }

  void bind_int(int i, int64_t v) override { check(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_real(int i, double v) override { check(sqlite3_bind_double(stmt_, i, v)); }
  void bind_text(int i, const std::string& v) override {
    // SQLITE_TRANSIENT: SQLite copies the bytes, so `v` may die before the statement runs.
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_null(int i) override { check(sqlite3_bind_null(stmt_, i)); }
  bool step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, where_, op_);
  }
  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  bool is_null(int i) const override { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  int64_t int64(int i) const override { return sqlite3_column_int64(stmt_, i); }
  double real(int i) const override { return sqlite3_column_double(stmt_, i); }
  std::string text(int i) const override {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, where_, op_);
  }
  sqlite3* db_;
  const std::string& where_;
  std::string op_;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(const std::string& path, std::string storage) : storage_(std::move(storage)) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             nullptr);
    if (rc != SQLITE_OK) {
      // SQLite hands back a handle even when opening fails; it carries the message, then goes.
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close_v2(db_);
      throw IoError(cat("[study] open ", path, ": ", msg, " (", hint_for(rc), ")"));
    }
    const char* p = sqlite3_db_filename(db_, "main");
    where_ = p && *p ? p : path;
    sqlite3_busy_timeout(db_, 10'000);
    try {
      exec("PRAGMA foreign_keys=ON", "enable foreign keys");
    } catch (...) {
      sqlite3_close_v2(db_);
      throw;
    }
  }
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  Backend backend() const override { return Backend::sqlite; }
  const std::string& storage() const override { return storage_; }
  const std::string& where() const override { return where_; }
  void exec(const std::string& sql, const std::string& op) override {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
      fail(db_, where_, op);
  }
  std::unique_ptr<Cursor> prepare(const char* sql, const std::string& op) override {
    return std::make_unique<SqliteCursor>(db_, where_, sql, op);
  }
  void begin() override { exec("BEGIN IMMEDIATE", "begin transaction"); }
  void rollback() noexcept override {
    // A failed rollback leaves nothing half-written anyway: SQLite discards an uncommitted
    // transaction when the connection closes.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  std::set<std::string> table_names() override {
    std::set<std::string> names;
    SqliteCursor q(db_, where_, "SELECT name FROM sqlite_master WHERE type = 'table'",
                   "list tables");
    while (q.step()) names.insert(q.text(0));
    return names;
  }
  std::string seconds_since(const std::string& column) const override {
    return cat("((julianday('now') - julianday(", column, ")) * 86400.0)");
  }

 private:
  sqlite3* db_ = nullptr;
  std::string storage_, where_;
};

}  // namespace

std::unique_ptr<Database> connect_sqlite(const std::string& path, const std::string& storage) {
  return std::make_unique<SqliteDatabase>(path, storage);
}

bool is_sqlite_database(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  // the header is read by the first statement: "file is not a database" (SQLITE_NOTADB) there
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA schema_version", nullptr, nullptr, nullptr);
  sqlite3_close_v2(db);
  return (rc & 0xff) != SQLITE_NOTADB;  // busy or locked: a database someone is writing
}

}  // namespace mase::search::store
