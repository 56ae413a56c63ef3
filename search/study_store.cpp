// search/study_store.cpp — choosing the backend from the storage string, opening a study
// storage (connect + Optuna's tables), the host name. The backends: sqlite_store.cpp,
// postgres_store.cpp. Read search/study_store.h first.
#include "search/study_store.h"

#include <unistd.h>

#include "runtime/error.h"
#include "search/optuna_schema.h"

namespace mase::search::store {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

bool is_postgres_url(const std::string& storage) {
  return starts_with(storage, "postgresql://") || starts_with(storage, "postgres://") ||
         starts_with(storage, "postgresql+");
}

std::string redact(const std::string& storage) {
  const size_t scheme = storage.find("://");
  if (scheme == std::string::npos) return storage;
  const size_t host_end = storage.find_first_of("/?", scheme + 3);
  const size_t at = storage.rfind('@', host_end == std::string::npos ? storage.size() : host_end);
  if (at == std::string::npos || at < scheme) return storage;
  const size_t colon = storage.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return storage;  // a user, no password
  return storage.substr(0, colon + 1) + "***" + storage.substr(at);
}

std::unique_ptr<Database> connect(const std::string& storage) {
  if (is_postgres_url(storage)) return connect_postgres(storage);
  if (starts_with(storage, "sqlite:///"))  // SQLAlchemy's form: sqlite:///rel, sqlite:////abs
    return connect_sqlite(storage.substr(10), storage);
  MASE_CHECK(storage.find("://") == std::string::npos, ConfigError,
             "[study] expected a storage sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB"
             ", got ", redact(storage), " (mase keeps studies in SQLite or PostgreSQL)");
  return connect_sqlite(storage, storage);
}

std::unique_ptr<Database> open_database(const std::string& storage) {
  std::unique_ptr<Database> db = connect(storage);
  // The first reads: a file that is not a database or not a study file, a schema of another
  // Optuna version, fail here, before anything was written. Two processes creating the same
  // new storage: one after the other.
  Transaction tx(*db);
  ensure_optuna_schema(*db);
  tx.commit();
  return db;
}

void use_wal(Database& db) {
  if (db.backend() == Backend::sqlite) db.exec("PRAGMA journal_mode=WAL", "set WAL journal mode");
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace mase::search::store
