// search/optuna_schema.h — the study storage's tables: Optuna's RDB schema, checked or created.
//
// A study storage (a SQLite file, or a PostgreSQL database) is an Optuna storage
// (optuna/storages/_rdb/models.py, schema 12, alembic revision v3.2.0.a: Optuna 3.2 to 5.0
// read and write it unchanged), so that
// `optuna.load_study(storage="sqlite:///studies.db")` and optuna-dashboard open mase's studies
// and mase-search continues studies an Optuna script began. The thirteen tables:
//   studies, study_directions, study_user_attributes, study_system_attributes (mase keeps its
//   sampler, seed and space here: "mase:sampler", "mase:seed", "mase:space"), trials,
//   trial_params, trial_values, trial_intermediate_values, trial_user_attributes,
//   trial_system_attributes ("mase:pid", "mase:host": who runs the trial, for resume),
//   trial_heartbeats (a worker's beats while its trial runs: search/heartbeat.h),
//   version_info and alembic_version (the rows Optuna checks before it reads anything).
// On PostgreSQL the same tables with Optuna's native ENUM types (studydirection, trialstate,
// trialvaluetype, trialintermediatevaluetype) and SERIAL keys, as Optuna creates them there.
// A file of mase's first schema (studies.name, space_json, trial_attrs) is migrated in place.
// Read next: search/optuna_format.h, search/study.cpp.
#pragma once

namespace mase::search::store {

class Database;

// The alembic revision and schema_version this code reads and writes.
inline constexpr const char* kOptunaRevision = "v3.2.0.a";
inline constexpr int kOptunaSchemaVersion = 12;

// Inside the caller's write transaction: an empty file (or PostgreSQL schema) gets Optuna's
// tables and version rows; an Optuna storage must be at kOptunaRevision; a mase file of the
// first schema is migrated. IoError naming the storage for anything else (another Optuna
// revision, other tables), having written nothing.
void ensure_optuna_schema(Database& db);

}  // namespace mase::search::store
