// search/study_store.h — the thin layer between the study code and its database: SQLite (a
// file, the embedded default) or PostgreSQL (a server, for workers on many machines).
//
// The study code (search/study.cpp, study_rows.cpp, optuna_schema.cpp) writes its SQL once, with
// ?1, ?2, ... parameters, in the dialect both databases share (INSERT ... ON CONFLICT ... DO
// UPDATE, RETURNING); what differs lives behind `Database`, one small class per backend:
//   sqlite_store.cpp    sqlite3_prepare/step on the file; BEGIN IMMEDIATE takes its write lock
//   postgres_store.cpp  libpq's PQexecParams ($1, $2, ...); BEGIN + a transaction-level
//                       advisory lock, so write transactions queue as SQLite's do
// Three RAII types on top, the same for both: a Statement (bind parameters, step through rows),
// a Transaction (the exclusive write transaction, rolled back if an exception leaves the scope
// first) and open_database (connect, then Optuna's tables: search/optuna_schema.h).
// Every database failure becomes a mase::IoError "[study] <op> on <where>: <message> (hint)",
// where <where> is the file, or the URL without its password. Values are always bound as
// parameters, never pasted into SQL text: a study or attribute name with a quote is just data.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace mase::search::store {

enum class Backend { sqlite, postgresql };

// A prepared statement of one backend (what Statement forwards to). Parameters 1-based,
// columns 0-based, as SQLite counts.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void bind_int(int i, int64_t v) = 0;
  virtual void bind_real(int i, double v) = 0;
  virtual void bind_text(int i, const std::string& v) = 0;
  virtual void bind_null(int i) = 0;
  virtual bool step() = 0;   // runs the statement on the first call; true while there is a row
  virtual void reset() = 0;  // ready to run again, bindings cleared
  virtual bool is_null(int i) const = 0;
  virtual int64_t int64(int i) const = 0;
  virtual double real(int i) const = 0;
  virtual std::string text(int i) const = 0;  // "" for NULL
};

// One connection to a study storage.
class Database {
 public:
  virtual ~Database() = default;
  virtual Backend backend() const = 0;
  // The storage as given (the password included: what Workers and Heartbeat reopen). Never
  // print it; print where().
  virtual const std::string& storage() const = 0;
  virtual const std::string& where() const = 0;  // the file, or the URL with "***" for a password
  // SQL that returns nothing worth reading (CREATE, PRAGMA, COMMIT; several statements allowed).
  virtual void exec(const std::string& sql, const std::string& op) = 0;
  virtual std::unique_ptr<Cursor> prepare(const char* sql, const std::string& op) = 0;
  // The exclusive write transaction (see Transaction); rollback never throws.
  virtual void begin() = 0;
  virtual void rollback() noexcept = 0;
  virtual std::set<std::string> table_names() = 0;  // of this file / the current schema
  // SQL for the seconds from timestamp `column` (UTC, Optuna's heartbeat) to now.
  virtual std::string seconds_since(const std::string& column) const = 0;
};

// `storage`: a file path or sqlite:///FILE (SQLite), or postgresql://USER:PASSWORD@HOST:PORT/DB
// (also postgres:// and SQLAlchemy's postgresql+psycopg2://; libpq's ?options=... work).
// ConfigError for another scheme; IoError if it cannot be opened or reached (wrong password,
// no server, no such database) or is not a study storage. connect only connects;
// open_database also creates, checks or migrates Optuna's tables (search/optuna_schema.h) in
// one write transaction, so a storage that is refused is left as it was.
std::unique_ptr<Database> connect(const std::string& storage);
std::unique_ptr<Database> open_database(const std::string& storage);
bool is_postgres_url(const std::string& storage);
// The storage with the password of a URL replaced by "***" (for messages).
std::string redact(const std::string& storage);

std::unique_ptr<Database> connect_sqlite(const std::string& path, const std::string& storage);
// Whether the file at `path` is a SQLite database, asked through SQLite (a read-only
// connection, opened and closed). Never read a study file with a plain open() + close() in a
// process that may hold a connection to it: POSIX drops ALL of a process's locks on a file when
// ANY of its descriptors to it closes, among them the SHARED lock a WAL-mode connection holds
// for its whole life; another process closing its connection then gets EXCLUSIVE, takes
// itself for the last one and deletes the WAL under us (sqlite.org/howtocorrupt.html, 2.2).
// SQLite's own VFS keeps such descriptors open until the process's locks are released.
bool is_sqlite_database(const std::string& path);
std::unique_ptr<Database> connect_postgres(const std::string& url);  // a stub without libpq

// WAL journaling on SQLite (readers never block the writer), set once the caller knows the
// storage is its to change, outside any transaction; nothing on PostgreSQL.
void use_wal(Database& db);

class Statement {
 public:
  Statement(Database& db, const char* sql, const std::string& op) : c_(db.prepare(sql, op)) {}
  Statement& bind(int i, int64_t v) { return c_->bind_int(i, v), *this; }
  Statement& bind(int i, double v) { return c_->bind_real(i, v), *this; }
  Statement& bind(int i, const std::string& v) { return c_->bind_text(i, v), *this; }
  Statement& bind_null(int i) { return c_->bind_null(i), *this; }
  bool step() { return c_->step(); }  // the next row: true if there is one
  void run() {  // a statement that returns no rows (INSERT, UPDATE), then ready for reuse
    while (step()) {
    }
    reset();
  }
  void reset() { c_->reset(); }
  bool is_null(int i) const { return c_->is_null(i); }
  int64_t int64(int i) const { return c_->int64(i); }
  double real(int i) const { return c_->real(i); }
  std::string text(int i) const { return c_->text(i); }

 private:
  std::unique_ptr<Cursor> c_;
};

// The write transaction: on SQLite BEGIN IMMEDIATE takes the file's write lock at once
// (waiting up to the busy timeout); on PostgreSQL BEGIN and pg_advisory_xact_lock, one lock
// for every mase write transaction in the schema. Either way the reads inside cannot go
// stale before its writes: what makes ask() safe across processes and machines. Not committed
// when the scope ends (an exception): rolled back.
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) { db_.begin(); }
  ~Transaction() {
    if (open_) db_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    db_.exec("COMMIT", "commit transaction");
    open_ = false;
  }

 private:
  Database& db_;
  bool open_ = true;
};

// This machine's name (gethostname), "" if it has none.
std::string host_name();

}  // namespace mase::search::store
