// search/study_open.cpp — opening a study: creating it or checking a stored one against the
// space, directions and sampler given (all refused before anything is written), and loading one
// with what it was created with. Read search/study.h first; the trial life cycle is
// search/study.cpp.
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/space_json.h"
#include "search/study.h"
#include "search/study_rows.h"
#include "search/study_store.h"

namespace mase::search {

namespace {

using nlohmann::json;
using store::Database;
using store::Statement;
using store::Transaction;
using namespace rows;

const char* to_string(Direction d) { return d == Direction::maximize ? "maximize" : "minimize"; }
const char* optuna_name(Direction d) { return d == Direction::maximize ? "MAXIMIZE" : "MINIMIZE"; }

std::string words(const std::vector<Direction>& dirs) {  // "maximize" or "maximize, minimize"
  std::string out;
  for (Direction d : dirs) out += (out.empty() ? "" : ", ") + std::string(to_string(d));
  return out;
}

// How an Optuna script's distributions differ from `space`, in words; "" if they agree (the
// space may have parameters no trial used yet).
std::string distributions_difference(const std::vector<Param>& stored, const Space& space) {
  for (const Param& p : stored) {
    const Param* mine = nullptr;
    for (const Param& q : space.params()) mine = q.name == p.name ? &q : mine;
    if (!mine) return "parameter " + describe(param_to_json(p)) + ", which this space lacks";
    if (!optuna::same_param(p, *mine))
      return "parameter " + describe(param_to_json(p)) + ", not " + describe(param_to_json(*mine));
  }
  return "";
}

Space space_of(const std::vector<Param>& params) {
  Space space;
  for (const Param& p : params) {
    if (p.kind == Param::Kind::categorical) space.categorical(p.name, p.choices);
    else if (p.kind == Param::Kind::integer)
      space.integer(p.name, std::llround(p.low), std::llround(p.high), std::llround(p.step), p.log);
    else space.real(p.name, p.low, p.high, p.log);
  }
  return space;
}

json parse_space(const std::string& text, const std::string& name, const Database& db) {
  try {
    return optuna::parse_stored(text, "a mase:space");
  } catch (const json::exception& e) {
    throw IoError(cat("[study] study '", name, "' in ", db.where(),
                      " has an unreadable mase:space: ", e.what(), " (was it written by mase?)"));
  }
}

}  // namespace

// --- opening ---

Study Study::open(const std::string& storage, const std::string& name, Space space,
                  Direction direction, std::unique_ptr<Sampler> sampler, uint64_t seed) {
  return open(storage, name, std::move(space), std::vector<Direction>{direction},
              std::move(sampler), seed);
}

Study Study::open(const std::string& storage, const std::string& name, Space space,
                  std::vector<Direction> directions, std::unique_ptr<Sampler> sampler,
                  uint64_t seed) {
  return open_study(storage, name, std::move(space), std::move(directions), std::move(sampler),
                    seed, true);
}

Study Study::open_study(const std::string& storage, const std::string& name, Space space,
                        std::vector<Direction> directions, std::unique_ptr<Sampler> sampler,
                        uint64_t seed, bool adopt) {
  MASE_CHECK(sampler != nullptr, ConfigError, "[study] study '", name,
             "' expected a sampler, got none");
  MASE_CHECK(!name.empty(), ConfigError, "[study] expected a study name, got an empty one");
  MASE_CHECK(!directions.empty(), ConfigError, "[study] study '", name,
             "' expected at least one direction, got none");
  sampler->set_directions(directions);  // a sampler of one value refuses several, here
  Study s;  // if anything below throws, ~Study closes the file
  s.db_ = store::open_database(storage);
  Database& db = *s.db_;
  const std::string& path = db.where();
  s.name_ = name;
  s.space_ = std::move(space);
  s.directions_ = std::move(directions);
  s.sampler_ = std::move(sampler);
  const json given = space_to_json(s.space_);

  {  // the statements end with the scope: WAL cannot be set while one is reading
    Transaction tx(db);  // look up and maybe create in one step: two processes, one study
    Statement find(db, "SELECT study_id FROM studies WHERE study_name = ?1", "read study");
    if (find.bind(1, name).step()) {
      s.study_id_ = find.int64(0);
      const std::string where = cat("[study] study '", name, "' in ", path, " was created with ");
      const char* hint = " (use another --study name or file)";
      const std::vector<Direction> dirs = stored_directions(db, s.study_id_, where);
      MASE_CHECK(dirs == s.directions_, ConfigError, where, dirs.size() > 1 ? "directions " : "direction ",
                 words(dirs), ", not ", words(s.directions_), hint);
      std::optional<std::string> sampler_json = system_attr(db, s.study_id_, "mase:sampler");
      if (sampler_json) {  // a study mase made: its sampler and space are recorded
        const std::string stored = optuna::attr_text(*sampler_json);
        MASE_CHECK(stored == s.sampler_->name(), ConfigError, where, "sampler ", stored, ", not ",
                   s.sampler_->name(), hint);
        std::optional<std::string> space_text = system_attr(db, s.study_id_, "mase:space");
        const json stored_space = parse_space(space_text.value_or("[]"), name, db);
        std::string diff = space_difference(stored_space, given);
        MASE_CHECK(diff.empty(), ConfigError, where, diff, hint);
      } else {  // an Optuna script's: its trials' distributions must agree with the space
        std::string diff = distributions_difference(distributions(db, s.study_id_), s.space_);
        MASE_CHECK(diff.empty(), ConfigError, where, diff, hint);
        if (adopt) set_system_attrs(db, s.study_id_, s.sampler_->name(), seed, given);
      }
    } else {
      Statement ins(db, "INSERT INTO studies(study_name) VALUES(?1) RETURNING study_id",
                    "create study");
      MASE_CHECK(ins.bind(1, name).step(), IoError, "[study] create study '", name, "' on ", path,
                 ": expected its id back, got none");
      s.study_id_ = ins.int64(0);
      ins.reset();  // done with it: SQLite commits only once no statement is in progress
      Statement dir(db,
                    "INSERT INTO study_directions(direction, study_id, objective) "
                    "VALUES(?1, ?2, ?3)",
                    "create study");
      for (size_t k = 0; k < s.directions_.size(); ++k)
        dir.bind(1, std::string(optuna_name(s.directions_[k]))).bind(2, s.study_id_)
            .bind(3, static_cast<int64_t>(k)).run();
      set_system_attrs(db, s.study_id_, s.sampler_->name(), seed, given);
    }
    tx.commit();
  }
  store::use_wal(db);  // only now: a refused study leaves the file as it was
  return s;
}

void check_study_file(const std::string& storage) {
  if (store::is_postgres_url(storage)) return;  // a server: connecting says what is wrong
  const std::string path = storage.rfind("sqlite:///", 0) == 0 ? storage.substr(10) : storage;
  std::error_code ec;
  MASE_CHECK(std::filesystem::exists(path, ec), IoError, "[study] no study file ", path,
             " (run a search first, or give --dir)");
  const auto size = std::filesystem::file_size(path, ec);
  MASE_CHECK(!ec && size > 0, IoError, "[study] ", path, " expected a study file, got ",
             ec ? "a file that cannot be read" : "an empty file (0 bytes)",
             " (remove it, or give another --dir)");
  // through SQLite, never std::ifstream: this process may hold a connection to the file
  // (a worker's heartbeat thread calls load), and a plain close would drop its locks
  // (store::is_sqlite_database says why)
  MASE_CHECK(store::is_sqlite_database(path), IoError, "[study] ", path,
             " expected a SQLite study file, got a file that is not one (damaged, or another "
             "file by that name: remove it, or give another --dir)");
}

Study Study::load(const std::string& storage, const std::string& name) {
  check_study_file(storage);
  std::vector<Direction> dirs;
  std::string sampler = "tpe", known;
  uint64_t seed = 0;
  Space space;
  {
    Study s;  // only to own the connection while reading
    s.db_ = store::open_database(storage);
    Database& db = *s.db_;
    const std::string& path = db.where();
    Statement find(db, "SELECT study_id, study_name FROM studies ORDER BY study_id",
                   "read studies");
    while (find.step()) {
      known += (known.empty() ? "" : ", ") + find.text(1);
      if (find.text(1) == name) s.study_id_ = find.int64(0);
    }
    MASE_CHECK(s.study_id_ != 0, ConfigError, "[study] no study '", name, "' in ", path,
               " (it has: ", known.empty() ? "none" : known, ")");
    const std::string where = cat("[study] study '", name, "' in ", path, " has ");
    dirs = stored_directions(db, s.study_id_, where);
    // A study an Optuna script made has no mase attributes: its distributions, seed 0, and
    // Optuna 5.0's default sampler, TPESampler() — for one objective and for several (MOTPE,
    // search/tpe_multi.cpp; NSGA-II is what a script asks for by name).
    if (auto v = system_attr(db, s.study_id_, "mase:sampler")) sampler = optuna::attr_text(*v);
    if (auto v = system_attr(db, s.study_id_, "mase:seed"))
      seed = std::strtoull(optuna::attr_text(*v).c_str(), nullptr, 10);
    auto text = system_attr(db, s.study_id_, "mase:space");
    try {
      space = text ? space_from_json(parse_space(*text, name, db))
                   : space_of(distributions(db, s.study_id_));
    } catch (const json::exception& e) {
      throw IoError(cat("[study] study '", name, "' in ", path, " has an unreadable mase:space: ",
                        e.what(), " (was it written by mase?)"));
    }
  }
  return open_study(storage, name, std::move(space), std::move(dirs), make_sampler(sampler, seed),
                    seed, false);
}

// The moved-from study no longer owns the connection; the destructor closes it.
Study::Study(Study&&) noexcept = default;
Study& Study::operator=(Study&&) noexcept = default;
Study::~Study() = default;

}  // namespace mase::search
