// search/optuna_schema.cpp — Optuna's tables as Optuna 5.0 creates them on SQLite and on
// PostgreSQL, the version check, and the migration of mase's first schema (SQLite only).
// Read search/optuna_schema.h first.
#include "search/optuna_schema.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/space_json.h"
#include "search/study_store.h"

namespace mase::search::store {

namespace {

// `sqlite3 studies.db .schema` of a file optuna.create_study made (Optuna 5.0.0).
constexpr const char* kTables = R"sql(
CREATE TABLE studies (study_id INTEGER NOT NULL, study_name VARCHAR(512) NOT NULL,
  PRIMARY KEY (study_id));
CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name);
CREATE TABLE version_info (version_info_id INTEGER NOT NULL, schema_version INTEGER,
  library_version VARCHAR(256), PRIMARY KEY (version_info_id), CHECK (version_info_id=1));
CREATE TABLE study_directions (study_direction_id INTEGER NOT NULL,
  direction VARCHAR(8) NOT NULL, study_id INTEGER NOT NULL, objective INTEGER NOT NULL,
  PRIMARY KEY (study_direction_id), UNIQUE (study_id, objective),
  FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE study_user_attributes (study_user_attribute_id INTEGER NOT NULL, study_id INTEGER,
  "key" VARCHAR(512), value_json TEXT, PRIMARY KEY (study_user_attribute_id),
  UNIQUE (study_id, "key"), FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE study_system_attributes (study_system_attribute_id INTEGER NOT NULL,
  study_id INTEGER, "key" VARCHAR(512), value_json TEXT,
  PRIMARY KEY (study_system_attribute_id), UNIQUE (study_id, "key"),
  FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE trials (trial_id INTEGER NOT NULL, number INTEGER, study_id INTEGER,
  state VARCHAR(8) NOT NULL, datetime_start DATETIME, datetime_complete DATETIME,
  PRIMARY KEY (trial_id), FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE INDEX ix_trials_study_id ON trials (study_id);
CREATE TABLE trial_user_attributes (trial_user_attribute_id INTEGER NOT NULL, trial_id INTEGER,
  "key" VARCHAR(512), value_json TEXT, PRIMARY KEY (trial_user_attribute_id),
  UNIQUE (trial_id, "key"), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_system_attributes (trial_system_attribute_id INTEGER NOT NULL,
  trial_id INTEGER, "key" VARCHAR(512), value_json TEXT,
  PRIMARY KEY (trial_system_attribute_id), UNIQUE (trial_id, "key"),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_params (param_id INTEGER NOT NULL, trial_id INTEGER,
  param_name VARCHAR(512), param_value FLOAT, distribution_json TEXT, PRIMARY KEY (param_id),
  UNIQUE (trial_id, param_name), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_values (trial_value_id INTEGER NOT NULL, trial_id INTEGER NOT NULL,
  objective INTEGER NOT NULL, value FLOAT, value_type VARCHAR(7) NOT NULL,
  PRIMARY KEY (trial_value_id), UNIQUE (trial_id, objective),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_intermediate_values (trial_intermediate_value_id INTEGER NOT NULL,
  trial_id INTEGER NOT NULL, step INTEGER NOT NULL, intermediate_value FLOAT,
  intermediate_value_type VARCHAR(7) NOT NULL, PRIMARY KEY (trial_intermediate_value_id),
  UNIQUE (trial_id, step), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_heartbeats (trial_heartbeat_id INTEGER NOT NULL, trial_id INTEGER NOT NULL,
  heartbeat DATETIME NOT NULL, PRIMARY KEY (trial_heartbeat_id), UNIQUE (trial_id),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL,
  CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
)sql";

// `pg_dump --schema-only` of a database optuna.create_study made (Optuna 5.0.0, SQLAlchemy 2.1),
// written as SQLAlchemy's CREATE statements: SERIAL keys, native ENUM types for the states.
constexpr const char* kPostgresTables = R"sql(
CREATE TYPE studydirection AS ENUM ('NOT_SET', 'MINIMIZE', 'MAXIMIZE');
CREATE TYPE trialstate AS ENUM ('RUNNING', 'COMPLETE', 'PRUNED', 'FAIL', 'WAITING');
CREATE TYPE trialvaluetype AS ENUM ('FINITE', 'INF_POS', 'INF_NEG');
CREATE TYPE trialintermediatevaluetype AS ENUM ('FINITE', 'INF_POS', 'INF_NEG', 'NAN');
CREATE TABLE studies (study_id SERIAL NOT NULL, study_name VARCHAR(512) NOT NULL,
  PRIMARY KEY (study_id));
CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name);
CREATE TABLE version_info (version_info_id INTEGER NOT NULL, schema_version INTEGER,
  library_version VARCHAR(256), PRIMARY KEY (version_info_id), CHECK (version_info_id=1));
CREATE TABLE study_directions (study_direction_id SERIAL NOT NULL,
  direction studydirection NOT NULL, study_id INTEGER NOT NULL, objective INTEGER NOT NULL,
  PRIMARY KEY (study_direction_id), UNIQUE (study_id, objective),
  FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE study_user_attributes (study_user_attribute_id SERIAL NOT NULL, study_id INTEGER,
  key VARCHAR(512), value_json TEXT, PRIMARY KEY (study_user_attribute_id),
  UNIQUE (study_id, key), FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE study_system_attributes (study_system_attribute_id SERIAL NOT NULL,
  study_id INTEGER, key VARCHAR(512), value_json TEXT,
  PRIMARY KEY (study_system_attribute_id), UNIQUE (study_id, key),
  FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE TABLE trials (trial_id SERIAL NOT NULL, number INTEGER, study_id INTEGER,
  state trialstate NOT NULL, datetime_start TIMESTAMP WITHOUT TIME ZONE,
  datetime_complete TIMESTAMP WITHOUT TIME ZONE, PRIMARY KEY (trial_id),
  FOREIGN KEY(study_id) REFERENCES studies (study_id));
CREATE INDEX ix_trials_study_id ON trials (study_id);
CREATE TABLE trial_user_attributes (trial_user_attribute_id SERIAL NOT NULL, trial_id INTEGER,
  key VARCHAR(512), value_json TEXT, PRIMARY KEY (trial_user_attribute_id),
  UNIQUE (trial_id, key), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_system_attributes (trial_system_attribute_id SERIAL NOT NULL,
  trial_id INTEGER, key VARCHAR(512), value_json TEXT,
  PRIMARY KEY (trial_system_attribute_id), UNIQUE (trial_id, key),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_params (param_id SERIAL NOT NULL, trial_id INTEGER,
  param_name VARCHAR(512), param_value FLOAT(53), distribution_json TEXT, PRIMARY KEY (param_id),
  UNIQUE (trial_id, param_name), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_values (trial_value_id SERIAL NOT NULL, trial_id INTEGER NOT NULL,
  objective INTEGER NOT NULL, value FLOAT(53), value_type trialvaluetype NOT NULL,
  PRIMARY KEY (trial_value_id), UNIQUE (trial_id, objective),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_intermediate_values (trial_intermediate_value_id SERIAL NOT NULL,
  trial_id INTEGER NOT NULL, step INTEGER NOT NULL, intermediate_value FLOAT(53),
  intermediate_value_type trialintermediatevaluetype NOT NULL,
  PRIMARY KEY (trial_intermediate_value_id), UNIQUE (trial_id, step),
  FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE trial_heartbeats (trial_heartbeat_id SERIAL NOT NULL, trial_id INTEGER NOT NULL,
  heartbeat TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (trial_heartbeat_id),
  UNIQUE (trial_id), FOREIGN KEY(trial_id) REFERENCES trials (trial_id));
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL,
  CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
)sql";

// The library_version Optuna's version_info row carries (any Optuna of this revision).
constexpr const char* kLibraryVersion = "5.0.0";

void create(Database& db) {
  db.exec(db.backend() == Backend::postgresql ? kPostgresTables : kTables,
          "create Optuna's tables");
  Statement v(db, "INSERT INTO version_info VALUES(1, ?1, ?2)", "write version_info");
  v.bind(1, int64_t{kOptunaSchemaVersion}).bind(2, std::string(kLibraryVersion)).run();
  Statement a(db, "INSERT INTO alembic_version VALUES(?1)", "write alembic_version");
  a.bind(1, std::string(kOptunaRevision)).run();
}

// mase's first schema (studies(id, name, direction, sampler, seed, space_json), trials(...,
// state 'complete', started_at '...T...Z', pid, host), trial_params(value_text),
// trial_attrs): renamed aside, copied into Optuna's tables, dropped. One transaction.
void migrate_mase_v1(Database& db) {
  for (const char* t : {"studies", "trials", "trial_params", "trial_attrs"})
    db.exec(cat("ALTER TABLE ", t, " RENAME TO mase_v1_", t), "set the old tables aside");
  create(db);
  db.exec(R"sql(
INSERT INTO studies(study_id, study_name) SELECT id, name FROM mase_v1_studies;
INSERT INTO study_directions(direction, study_id, objective)
  SELECT upper(direction), id, 0 FROM mase_v1_studies;
INSERT INTO study_system_attributes(study_id, "key", value_json)
  SELECT id, 'mase:sampler', json_quote(sampler) FROM mase_v1_studies UNION ALL
  SELECT id, 'mase:seed', json_quote(CAST(seed AS TEXT)) FROM mase_v1_studies UNION ALL
  SELECT id, 'mase:space', space_json FROM mase_v1_studies;
INSERT INTO trials(trial_id, number, study_id, state, datetime_start, datetime_complete)
  SELECT id, number, study_id, CASE state WHEN 'failed' THEN 'FAIL' ELSE upper(state) END,
    replace(replace(started_at, 'T', ' '), 'Z', '.000000'),
    replace(replace(ended_at, 'T', ' '), 'Z', '.000000') FROM mase_v1_trials;
INSERT INTO trial_values(trial_id, objective, value, value_type)
  SELECT id, 0, value, 'FINITE' FROM mase_v1_trials
  WHERE value IS NOT NULL AND state IN ('complete', 'pruned');
INSERT INTO trial_system_attributes(trial_id, "key", value_json)
  SELECT id, 'mase:pid', CAST(pid AS TEXT) FROM mase_v1_trials UNION ALL
  SELECT id, 'mase:host', json_quote(host) FROM mase_v1_trials;
INSERT INTO trial_user_attributes(trial_id, "key", value_json)
  SELECT trial_id, name, json_quote(value_text) FROM mase_v1_trial_attrs;
)sql",
       "migrate the studies");
  // Parameters: text in the old file, Optuna's internal form and distribution now.
  Statement old(db,
                "SELECT p.trial_id, p.name, p.value_text, s.space_json, s.name "
                "FROM mase_v1_trial_params p JOIN mase_v1_trials t ON t.id = p.trial_id "
                "JOIN mase_v1_studies s ON s.id = t.study_id",
                "read the old parameters");
  Statement ins(db,
                "INSERT INTO trial_params(trial_id, param_name, param_value, distribution_json) "
                "VALUES(?1, ?2, ?3, ?4)",
                "migrate the parameters");
  while (old.step()) {
    Space space;
    try {
      space = space_from_json(optuna::parse_stored(old.text(3), "a space_json"));
    } catch (const nlohmann::json::exception& e) {
      throw IoError(cat("[study] study '", old.text(4), "' in ", db.where(),
                        " has an unreadable space_json: ", e.what(), " (was it written by mase?)"));
    }
    const Param& p = space.at(old.text(1));
    ins.bind(1, old.int64(0)).bind(2, p.name).bind(3, p.parse(old.text(2)));
    ins.bind(4, optuna::distribution_json(p)).run();
  }
  for (const char* t : {"trial_params", "trial_attrs", "trials", "studies"})
    db.exec(cat("DROP TABLE mase_v1_", t), "drop the old tables");
}

}  // namespace

void ensure_optuna_schema(Database& db) {
  const std::set<std::string> tables = db.table_names();
  if (tables.empty()) return create(db);
  if (tables.count("alembic_version")) {
    Statement q(db, "SELECT version_num FROM alembic_version", "read alembic_version");
    const std::string revision = q.step() ? q.text(0) : "(none)";
    const bool pg = db.backend() == Backend::postgresql;
    MASE_CHECK(revision == kOptunaRevision, IoError, "[study] ", db.where(),
               " expected Optuna's schema revision ", kOptunaRevision, " (Optuna 3.2 to 5.0), got ",
               revision, " (an older ", pg ? "database" : "file", ": `optuna storage upgrade ",
               "--storage ", pg ? db.where() : "sqlite:///" + db.where(),
               "`; a newer Optuna's: open it with that Optuna)");
    return;
  }
  if (tables.count("studies") && tables.count("trial_attrs") && db.backend() == Backend::sqlite)
    return migrate_mase_v1(db);
  std::string list;
  for (const std::string& t : tables) list += (list.empty() ? "" : ", ") + t;
  if (db.backend() == Backend::postgresql)
    throw IoError(cat("[study] ", db.where(), " expected an empty database or Optuna's tables, ",
                      "got tables ", list, " (give another database, or a schema of its own: ",
                      "?options=-csearch_path%3Dmase)"));
  throw IoError(cat("[study] ", db.where(), " expected an Optuna or mase study file, got a "
                    "SQLite file with tables ", list, " (give another --dir)"));
}

}  // namespace mase::search::store
