// search/postgres_store.cpp — the PostgreSQL backend of search/study_store.h, through libpq:
// a connection from a postgresql:// URL, statements run with PQexecParams (the shared ?N
// placeholders become $N; values travel as text, their types inferred by the server from the
// columns they meet), the write transaction as BEGIN + pg_advisory_xact_lock, and the server's
// messages as one line with a hint. Built only where libpq was found (MASE_HAS_LIBPQ,
// search/CMakeLists.txt); otherwise connect_postgres says how to get it.
#include "runtime/error.h"
#include "search/study_store.h"

#ifdef MASE_HAS_LIBPQ
#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace mase::search::store {

namespace {

// One line out of libpq's multi-line messages ("...failed: Connection refused\n\tIs the ...").
std::string one_line(const char* msg) {
  std::string out;
  for (const char* p = msg ? msg : ""; *p; ++p) {
    const bool space = *p == '\n' || *p == '\t' || *p == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : *p;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// What to try next, for a failed connection (no SQLSTATE then: by the message).
const char* connect_hint(const std::string& msg) {
  if (has(msg, "password authentication failed") || has(msg, "no password supplied") ||
      has(msg, "authentication"))
    return "check the user and password in the URL";
  if (has(msg, "database") && has(msg, "does not exist"))
    return "create it first (createdb), or fix the database name at the URL's end";
  if (has(msg, "timeout") || has(msg, "Connection refused") || has(msg, "could not translate") ||
      has(msg, "No route") || has(msg, "could not connect"))
    return "is the server running, and listening on that host and port "
           "(listen_addresses, pg_hba.conf, a firewall)?";
  return "see the PostgreSQL message";
}

// ... and for a failed statement, by its SQLSTATE class.
const char* statement_hint(const std::string& state) {
  if (state == "55P03" || state == "57014")
    return "another worker held the study's lock for more than 60 s";
  if (state.rfind("23", 0) == 0) return "a row broke a UNIQUE or NOT NULL rule of the schema";
  if (state.rfind("08", 0) == 0 || state.empty()) return "the connection to the server was lost";
  if (state.rfind("42", 0) == 0) return "the database does not hold Optuna's tables as expected";
  if (state.rfind("53", 0) == 0) return "the server is out of disk, memory or connections";
  return "see the PostgreSQL message";
}

// ?1 -> $1 outside quotes: the study code writes SQLite's placeholders, libpq wants these.
std::string dollar_params(const char* sql) {
  std::string out;
  char quote = 0;
  for (const char* p = sql; *p; ++p) {
    if (quote) quote = *p == quote ? 0 : quote;
    else if (*p == '\'' || *p == '"') quote = *p;
    else if (*p == '?' && p[1] >= '0' && p[1] <= '9') {
      out += '$';
      continue;
    }
    out += *p;
  }
  return out;
}

class PgResult {  // PQclear on every path
 public:
  explicit PgResult(PGresult* r = nullptr) : r_(r) {}
  ~PgResult() { PQclear(r_); }
  PgResult& operator=(PGresult* r) {
    PQclear(r_);
    r_ = r;
    return *this;
  }
  PGresult* get() const { return r_; }

 private:
  PGresult* r_;
};

// Throws for a result that is not a success: "[study] <op> on <where>: <message> (hint)".
void check(PGconn* conn, PGresult* r, const std::string& where, const std::string& op) {
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
  const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string msg = one_line(primary ? primary : PQerrorMessage(conn));
  throw IoError(cat("[study] ", op, " on ", where, ": ", msg, " (",
                    statement_hint(state ? state : ""), ")"));
}

class PgCursor final : public Cursor {
 public:
  PgCursor(PGconn* conn, const std::string& where, const char* sql, std::string op)
      : conn_(conn), where_(where), sql_(dollar_params(sql)), op_(std::move(op)) {}

  void bind_int(int i, int64_t v) override { slot(i) = std::to_string(v); }
  void bind_real(int i, double v) override {
    char buf[32];
    if (std::isnan(v)) std::snprintf(buf, sizeof buf, "NaN");
    else if (std::isinf(v)) std::snprintf(buf, sizeof buf, v > 0 ? "Infinity" : "-Infinity");
    else std::snprintf(buf, sizeof buf, "%.17g", v);  // exact: 17 digits round-trip a double
    slot(i) = buf;
  }
  void bind_text(int i, const std::string& v) override { slot(i) = v; }
  void bind_null(int i) override { slot(i).reset(); }

  bool step() override {
    if (!ran_) {
      std::vector<const char*> values;
      for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
      res_ = PQexecParams(conn_, sql_.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
      check(conn_, res_.get(), where_, op_);
      ran_ = true;
      row_ = 0;
    } else {
      ++row_;
    }
    return row_ < PQntuples(res_.get());
  }
  void reset() override {
    res_ = nullptr;
    ran_ = false;
    params_.clear();
  }
  bool is_null(int i) const override { return PQgetisnull(res_.get(), row_, i); }
  int64_t int64(int i) const override {
    return std::strtoll(PQgetvalue(res_.get(), row_, i), nullptr, 10);
  }
  double real(int i) const override { return std::strtod(PQgetvalue(res_.get(), row_, i), nullptr); }
  std::string text(int i) const override {
    return std::string(PQgetvalue(res_.get(), row_, i),
                       static_cast<size_t>(PQgetlength(res_.get(), row_, i)));
  }

 private:
  std::optional<std::string>& slot(int i) {
    MASE_CHECK(i >= 1 && i <= 64, ConfigError, "[study] ", op_, ": parameter ", i,
               " expected in 1..64");
    if (static_cast<int>(params_.size()) < i) params_.resize(i);
    return params_[i - 1];
  }
  PGconn* conn_;
  const std::string& where_;
  std::string sql_, op_;
  std::vector<std::optional<std::string>> params_;
  PgResult res_;
  bool ran_ = false;
  int row_ = 0;
};

class PgDatabase final : public Database {
 public:
  explicit PgDatabase(const std::string& url) : storage_(url), where_(redact(url)) {
    // SQLAlchemy's driver suffix (postgresql+psycopg2://) means nothing to libpq.
    std::string conninfo = url;
    if (conninfo.rfind("postgresql+", 0) == 0)
      conninfo = "postgresql" + conninfo.substr(conninfo.find("://"));
    // A host that does not answer must not hang a worker for minutes.
    if (!has(conninfo, "connect_timeout="))
      conninfo += (has(conninfo, "?") ? "&" : "?") + std::string("connect_timeout=10");
    conn_ = PQconnectdb(conninfo.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string msg = one_line(conn_ ? PQerrorMessage(conn_) : "out of memory");
      PQfinish(conn_);
      throw IoError(cat("[study] connect to ", where_, ": ", msg, " (", connect_hint(msg), ")"));
    }
    // Notices ("relation already exists, skipping") are not for the user's screen.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    try {
      // Waiting for another worker's write transaction: up to a minute, then an error.
      exec("SET lock_timeout = '60s'", "configure the session");
    } catch (...) {
      PQfinish(conn_);
      throw;
    }
  }
  ~PgDatabase() override { PQfinish(conn_); }

  Backend backend() const override { return Backend::postgresql; }
  const std::string& storage() const override { return storage_; }
  const std::string& where() const override { return where_; }
  void exec(const std::string& sql, const std::string& op) override {
    PgResult r(PQexec(conn_, sql.c_str()));
    check(conn_, r.get(), where_, op);
  }
  std::unique_ptr<Cursor> prepare(const char* sql, const std::string& op) override {
    return std::make_unique<PgCursor>(conn_, where_, sql, op);
  }
  void begin() override {
    // One lock per schema for every mase write transaction (ask, tell, resume, heartbeat):
    // held to COMMIT or ROLLBACK, released by the server if the worker dies.
    try {
      exec("BEGIN; SELECT pg_advisory_xact_lock(1834771301, hashtext(current_schema()))",
           "begin transaction");
    } catch (...) {
      rollback();  // a lock that timed out leaves the transaction open (and aborted)
      throw;
    }
  }
  void rollback() noexcept override { PQclear(PQexec(conn_, "ROLLBACK")); }
  std::set<std::string> table_names() override {
    std::set<std::string> names;
    PgCursor q(conn_, where_,
               "SELECT table_name FROM information_schema.tables "
               "WHERE table_schema = current_schema()",
               "list tables");
    while (q.step()) names.insert(q.text(0));
    return names;
  }
  std::string seconds_since(const std::string& column) const override {
    // Optuna writes heartbeats as CURRENT_TIMESTAMP into a timestamp without time zone, i.e.
    // in the session's time zone: compare in the same one.
    return cat("EXTRACT(EPOCH FROM (LOCALTIMESTAMP - ", column, "))");
  }

 private:
  PGconn* conn_ = nullptr;
  std::string storage_, where_;
};

}  // namespace

std::unique_ptr<Database> connect_postgres(const std::string& url) {
  return std::make_unique<PgDatabase>(url);
}

}  // namespace mase::search::store

#else  // built without libpq

namespace mase::search::store {

std::unique_ptr<Database> connect_postgres(const std::string& url) {
  throw ConfigError(cat("[study] ", redact(url), " expected a build with PostgreSQL support, got ",
                        "one without libpq (apt-get install libpq-dev, then reconfigure: "
                        "scripts/setup.sh)"));
}

}  // namespace mase::search::store

#endif
