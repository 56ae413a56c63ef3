// search/study_store.cpp — SQLite statements, transactions and opening a study file.
// Read search/study_store.h first (and search/optuna_schema.h for what the tables hold).
#include "search/study_store.h"

#include <sqlite3.h>
#include <unistd.h>


#include "runtime/error.h"
#include "search/optuna_schema.h"

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


}  // namespace

std::string path_of(sqlite3* db) {
  const char* p = db ? sqlite3_db_filename(db, "main") : nullptr;
  return p ? p : "?";
}

void fail(sqlite3* db, const std::string& op) {
  throw IoError(cat("[study] ", op, " on ", path_of(db), ": ", sqlite3_errmsg(db), " (",
                    hint_for(sqlite3_extended_errcode(db)), ")"));
}

void exec(sqlite3* db, const std::string& sql, const std::string& op) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, op);
}

sqlite3* open_database(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    // SQLite hands back a handle even when opening fails; it carries the message, then goes.
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    throw IoError(cat("[study] open ", path, ": ", msg, " (", hint_for(rc), ")"));
  }
  try {
    sqlite3_busy_timeout(db, 10'000);
    exec(db, "PRAGMA foreign_keys=ON", "enable foreign keys");
    {
      // The first reads of the file: one that is not a database, or not a study file, fails
      // here, before anything was written to it. Two processes creating the same new file: one
      // after the other.
      Transaction tx(db);
      ensure_optuna_schema(db);
      tx.commit();
    }
  } catch (...) {
    sqlite3_close_v2(db);
    throw;
  }
  return db;
}

void use_wal(sqlite3* db) { exec(db, "PRAGMA journal_mode=WAL", "set WAL journal mode"); }

// --- Statement ---

Statement::Statement(sqlite3* db, const char* sql, std::string op) : db_(db), op_(std::move(op)) {
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail(db_, op_);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) fail(db_, op_);
  return *this;
}

Statement& Statement::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) fail(db_, op_);
  return *this;
}

Statement& Statement::bind(int i, const std::string& v) {
  // SQLITE_TRANSIENT: SQLite copies the bytes, so `v` may die before the statement runs.
  if (sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    fail(db_, op_);
  return *this;
}

Statement& Statement::bind_null(int i) {
  if (sqlite3_bind_null(stmt_, i) != SQLITE_OK) fail(db_, op_);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, op_);
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
int64_t Statement::int64(int i) const { return sqlite3_column_int64(stmt_, i); }
double Statement::real(int i) const { return sqlite3_column_double(stmt_, i); }

std::string Statement::text(int i) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
}

// --- Transaction ---

Transaction::Transaction(sqlite3* db) : db_(db) {
  exec(db_, "BEGIN IMMEDIATE", "begin transaction");
}

Transaction::~Transaction() {
  // Destructors must not throw; a failed rollback leaves nothing half-written anyway (SQLite
  // discards an uncommitted transaction when the connection closes).
  if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec(db_, "COMMIT", "commit transaction");
  open_ = false;
}

// --- the host ---

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace mase::search::store
