// search/study.cpp — a study kept in a SQLite file: ask, tell, resume, optimize, best, CSV.
// Read search/study.h first (what is stored and why); the SQLite plumbing (statements,
// transactions, the schema) is search/study_store.cpp.
#include "search/study.h"

#include <sqlite3.h>
#include <sys/types.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/error.h"
#include "search/study_store.h"
#include "runtime/atomic_file.h"

namespace mase::search {

namespace {

using nlohmann::json;
using store::Statement;
using store::Transaction;

const char* to_string(Direction d) { return d == Direction::maximize ? "maximize" : "minimize"; }

const char* kind_name(Param::Kind k) {
  switch (k) {
    case Param::Kind::categorical: return "categorical";
    case Param::Kind::integer: return "integer";
    case Param::Kind::real: return "real";
  }
  return "?";
}

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string shortest(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

// --- the space as stored in studies.space_json ---

json space_to_json(const Space& space) {
  json params = json::array();
  for (const Param& p : space.params())
    params.push_back({{"name", p.name},
                      {"kind", kind_name(p.kind)},
                      {"choices", p.choices},
                      {"low", p.low},
                      {"high", p.high},
                      {"step", p.step},
                      {"log", p.log}});
  return params;
}

// The inverse of space_to_json (Study::load). The builders check the stored values again.
Space space_from_json(const json& params) {
  Space space;
  for (const json& p : params) {
    const std::string name = p.at("name").get<std::string>(), kind = p.at("kind").get<std::string>();
    if (kind == "categorical") {
      space.categorical(name, p.at("choices").get<std::vector<std::string>>());
    } else if (kind == "integer") {
      space.integer(name, std::llround(p.at("low").get<double>()),
                    std::llround(p.at("high").get<double>()),
                    std::llround(p.at("step").get<double>()), p.at("log").get<bool>());
    } else {
      space.real(name, p.at("low").get<double>(), p.at("high").get<double>(),
                 p.at("log").get<bool>());
    }
  }
  return space;
}

// One parameter in words, for the message that says how a stored study differs.
std::string describe(const json& p) {
  std::string s = p.at("name").get<std::string>() + ": " + p.at("kind").get<std::string>();
  if (p.at("kind") == "categorical") {
    std::string list;
    for (const auto& c : p.at("choices")) list += (list.empty() ? "" : ", ") + c.get<std::string>();
    return s + " {" + list + "}";
  }
  s += " [" + shortest(p.at("low").get<double>()) + ", " + shortest(p.at("high").get<double>()) +
       "]";
  if (p.at("kind") == "integer") s += " step " + shortest(p.at("step").get<double>());
  return p.at("log").get<bool>() ? s + " log" : s;
}

// How the stored space differs from the given one, in words; "" if they are the same.
// Both lists are sorted by name (search/space.h), so one merge walk finds the first difference.
std::string space_difference(const json& stored, const json& given) {
  size_t i = 0, j = 0;
  while (i < stored.size() || j < given.size()) {
    if (j == given.size() || (i < stored.size() && stored[i].at("name") < given[j].at("name")))
      return "parameter " + describe(stored[i]) + ", which this space lacks";
    if (i == stored.size() || given[j].at("name") < stored[i].at("name"))
      return "no parameter " + given[j].at("name").get<std::string>() + ", which this space has";
    if (stored[i] != given[j])
      return "parameter " + describe(stored[i]) + ", not " + describe(given[j]);
    ++i, ++j;
  }
  return "";
}

// --- reading trials back ---

// The trials of a study (or only trial `number`), by number, with their values parsed back to
// the internal form. Three queries (trials, their params, their attrs), not one per trial.
std::vector<TrialRecord> load_trials(sqlite3* db, int64_t study_id, const Space& space,
                                     std::optional<int64_t> number = std::nullopt) {
  // "?2 IS NULL OR number = ?2": one statement serves both "all trials" and "trial n".
  Statement rows(db,
                 "SELECT id, number, state, value, started_at, ended_at, pid, host FROM trials "
                 "WHERE study_id = ?1 AND (?2 IS NULL OR number = ?2) ORDER BY number",
                 "read trials");
  rows.bind(1, study_id);
  number ? rows.bind(2, *number) : rows.bind_null(2);
  std::vector<TrialRecord> out;
  std::map<int64_t, size_t> index_of_id;  // trials.id -> position in `out`
  while (rows.step()) {
    TrialRecord r;
    r.trial.number = rows.int64(1);
    r.trial.state = trial_state_from(rows.text(2));
    r.trial.value = rows.is_null(3) ? 0.0 : rows.real(3);
    r.started_at = rows.text(4);
    r.ended_at = rows.text(5);
    r.pid = rows.int64(6);
    r.host = rows.text(7);
    index_of_id[rows.int64(0)] = out.size();
    out.push_back(std::move(r));
  }
  for (const char* table : {"trial_params", "trial_attrs"}) {
    std::string sql = std::string("SELECT x.trial_id, x.name, x.value_text FROM ") + table +
                      " x JOIN trials t ON t.id = x.trial_id "
                      "WHERE t.study_id = ?1 AND (?2 IS NULL OR t.number = ?2)";
    Statement named(db, sql.c_str(), std::string("read ") + table);
    named.bind(1, study_id);
    number ? named.bind(2, *number) : named.bind_null(2);
    bool params = std::strcmp(table, "trial_params") == 0;
    while (named.step()) {
      TrialRecord& r = out.at(index_of_id.at(named.int64(0)));
      std::string name = named.text(1), text = named.text(2);
      if (params)
        r.trial.values[name] = space.at(name).parse(text);  // the space matches: checked by open
      else
        r.attrs[name] = text;
    }
  }
  return out;
}

void insert_attrs(sqlite3* db, int64_t trial_id, const std::map<std::string, std::string>& attrs) {
  Statement ins(db,
                "INSERT OR REPLACE INTO trial_attrs(trial_id, name, value_text) VALUES(?1, ?2, ?3)",
                "write trial attributes");
  for (const auto& [name, text] : attrs) ins.bind(1, trial_id).bind(2, name).bind(3, text).run();
}

// CSV: a field with a comma, quote or line break goes in quotes, its quotes doubled (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

// --- opening ---

Study Study::open(const std::string& path, const std::string& name, Space space,
                  Direction direction, std::unique_ptr<Sampler> sampler, uint64_t seed) {
  MASE_CHECK(sampler != nullptr, ConfigError, "[study] study '", name,
             "' expected a sampler, got none");
  MASE_CHECK(!name.empty(), ConfigError, "[study] expected a study name, got an empty one");
  Study s;  // if anything below throws, ~Study closes the file
  s.db_ = store::open_database(path);
  s.name_ = name;
  s.space_ = std::move(space);
  s.direction_ = direction;
  s.sampler_ = std::move(sampler);
  const json given = space_to_json(s.space_);

  Transaction tx(s.db_);  // look up and maybe create in one step: two processes, one study
  Statement find(s.db_, "SELECT id, direction, sampler, space_json FROM studies WHERE name = ?1",
                 "read study");
  if (find.bind(1, name).step()) {
    s.study_id_ = find.int64(0);
    const std::string where = cat("[study] study '", name, "' in ", path, " was created with ");
    const char* hint = " (use another --study name or file)";
    std::string dir = find.text(1), sampler_name = find.text(2);
    MASE_CHECK(dir == to_string(direction), ConfigError, where, "direction ", dir, ", not ",
               to_string(direction), hint);
    MASE_CHECK(sampler_name == s.sampler_->name(), ConfigError, where, "sampler ", sampler_name,
               ", not ", s.sampler_->name(), hint);
    std::string diff;
    try {
      diff = space_difference(json::parse(find.text(3)), given);
    } catch (const json::exception& e) {  // not JSON, or not the fields space_to_json writes
      throw IoError(cat("[study] study '", name, "' in ", path, " has an unreadable space_json: ",
                        e.what(), " (was the file written by mase?)"));
    }
    MASE_CHECK(diff.empty(), ConfigError, where, diff, hint);
  } else {
    Statement ins(s.db_,
                  "INSERT INTO studies(name, direction, sampler, seed, space_json) "
                  "VALUES(?1, ?2, ?3, ?4, ?5)",
                  "create study");
    // SQLite integers are signed 64-bit: the seed is stored as the same 64 bits, read as int64.
    ins.bind(1, name).bind(2, std::string(to_string(direction))).bind(3, s.sampler_->name());
    ins.bind(4, static_cast<int64_t>(seed)).bind(5, given.dump()).run();
    s.study_id_ = sqlite3_last_insert_rowid(s.db_);
  }
  tx.commit();
  return s;
}

Study Study::load(const std::string& path, const std::string& name) {
  MASE_CHECK(std::filesystem::exists(path), IoError, "[study] no study file ", path,
             " (run a search first, or give --dir)");
  std::string dir, sampler, space_json, known;
  int64_t seed = 0;
  bool found = false;
  {
    Study s;  // only to own the connection while reading
    s.db_ = store::open_database(path);
    Statement find(s.db_, "SELECT name, direction, sampler, seed, space_json FROM studies",
                   "read studies");
    while (find.step()) {
      known += (known.empty() ? "" : ", ") + find.text(0);
      if (find.text(0) != name) continue;
      found = true;
      dir = find.text(1);
      sampler = find.text(2);
      seed = find.int64(3);
      space_json = find.text(4);
    }
  }
  MASE_CHECK(found, ConfigError, "[study] no study '", name, "' in ", path, " (it has: ",
             known.empty() ? "none" : known, ")");
  Space space;
  try {
    space = space_from_json(json::parse(space_json));
  } catch (const json::exception& e) {
    throw IoError(cat("[study] study '", name, "' in ", path, " has an unreadable space_json: ",
                      e.what(), " (was the file written by mase?)"));
  }
  const auto useed = static_cast<uint64_t>(seed);
  return open(path, name, std::move(space),
              dir == "minimize" ? Direction::minimize : Direction::maximize,
              make_sampler(sampler, useed), useed);
}

Study::Study(Study&& o) noexcept
    : db_(o.db_), study_id_(o.study_id_), name_(std::move(o.name_)), space_(std::move(o.space_)),
      direction_(o.direction_), sampler_(std::move(o.sampler_)) {
  o.db_ = nullptr;  // the moved-from study no longer owns the connection
}

Study& Study::operator=(Study&& o) noexcept {
  if (this != &o) {
    sqlite3_close_v2(db_);
    db_ = o.db_;
    o.db_ = nullptr;
    study_id_ = o.study_id_;
    name_ = std::move(o.name_);
    space_ = std::move(o.space_);
    direction_ = o.direction_;
    sampler_ = std::move(o.sampler_);
  }
  return *this;
}

Study::~Study() { sqlite3_close_v2(db_); }  // a no-op on nullptr

// --- the trial life cycle ---

int Study::resume() {
  const std::string host = store::host_name();
  const int64_t me = getpid();
  Transaction tx(db_);
  Statement running(
      db_, "SELECT id, pid FROM trials WHERE study_id = ?1 AND state = 'running' AND host = ?2",
      "read running trials");
  running.bind(1, study_id_).bind(2, host);
  std::vector<std::pair<int64_t, int64_t>> gone;  // (trial id, pid)
  while (running.step()) {
    int64_t pid = running.int64(1);
    // kill(pid, 0) sends nothing: it only asks whether the process exists. ESRCH: it does not
    // (EPERM means it exists but belongs to someone else). Our own trials may still be in
    // progress in this process; a pid <= 0 names no process (kill would mean a process group).
    bool dead = pid <= 0 || (pid != me && kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH);
    if (dead) gone.emplace_back(running.int64(0), pid);
  }
  Statement mark(db_, "UPDATE trials SET state = 'failed', ended_at = ?2 WHERE id = ?1",
                 "mark trial failed");
  for (const auto& [id, pid] : gone) {
    mark.bind(1, id).bind(2, store::utc_now()).run();
    insert_attrs(db_, id,
                 {{"error", cat("process ", pid, " on ", host, " ended before the trial did")}});
  }
  tx.commit();
  return static_cast<int>(gone.size());
}

std::optional<Trial> Study::ask(std::optional<int64_t> budget) {
  // Reading the history, sampling and inserting happen under one write lock: another process
  // asking at the same moment waits, then sees this trial (running) in its history.
  Transaction tx(db_);
  std::vector<Trial> history;
  int64_t number = 0, taken = 0;  // taken: finished or running, what a budget counts
  for (TrialRecord& r : load_trials(db_, study_id_, space_)) {
    // Samplers maximize (search/sampler.h): a minimizing study shows them -value.
    if (direction_ == Direction::minimize) r.trial.value = -r.trial.value;
    number = std::max(number, r.trial.number + 1);
    taken += r.trial.state != TrialState::failed;
    history.push_back(std::move(r.trial));
  }
  std::optional<Values> values;
  if (!budget || taken < *budget) values = sampler_->sample(space_, history, number);
  if (!values) {
    tx.commit();  // nothing was written; committing just ends the transaction
    return std::nullopt;
  }

  Statement ins(db_,
                "INSERT INTO trials(study_id, number, state, started_at, pid, host) "
                "VALUES(?1, ?2, 'running', ?3, ?4, ?5)",
                "insert trial");
  ins.bind(1, study_id_).bind(2, number).bind(3, store::utc_now());
  ins.bind(4, static_cast<int64_t>(getpid())).bind(5, store::host_name()).run();
  const int64_t trial_id = sqlite3_last_insert_rowid(db_);

  Statement ins_param(db_,
                      "INSERT INTO trial_params(trial_id, name, value_text) VALUES(?1, ?2, ?3)",
                      "write trial values");
  Trial trial{number, TrialState::running, {}, 0.0};
  for (const Param& p : space_.params()) {
    auto it = values->find(p.name);
    MASE_CHECK(it != values->end() && p.contains(it->second), ConfigError, "[study] sampler ",
               sampler_->name(), " gave parameter '", p.name, "' no valid value in trial ", number);
    // The objective gets the value as it reads back from the file, so a resumed study and
    // this process agree on what trial `number` was.
    std::string text = p.format(it->second);
    trial.values[p.name] = p.parse(text);
    ins_param.bind(1, trial_id).bind(2, p.name).bind(3, text).run();
  }
  tx.commit();
  return trial;
}

void Study::tell(int64_t number, TrialState state, double value,
                 const std::map<std::string, std::string>& attrs) {
  MASE_CHECK(state != TrialState::running, ConfigError, "[study] tell(trial ", number,
             ") expected a final state (complete, failed, pruned), got running");
  std::map<std::string, std::string> all = attrs;
  if (state == TrialState::complete && std::isnan(value)) {
    // As in Optuna: a NaN cannot be ranked, so the trial counts as failed (and SQLite would
    // store the NaN as NULL anyway).
    state = TrialState::failed;
    all.emplace("error", "the objective returned nan");
  }
  Transaction tx(db_);
  Statement find(db_, "SELECT id, state FROM trials WHERE study_id = ?1 AND number = ?2",
                 "read trial");
  MASE_CHECK(find.bind(1, study_id_).bind(2, number).step(), ConfigError, "[study] study '", name_,
             "' has no trial ", number, " (tell only trials that ask returned)");
  const int64_t trial_id = find.int64(0);
  MASE_CHECK(find.text(1) == "running", ConfigError, "[study] trial ", number, " of study '", name_,
             "' is already ", find.text(1),
             ", not running (told twice, or marked failed by resume)");

  Statement upd(db_, "UPDATE trials SET state = ?2, value = ?3, ended_at = ?4 WHERE id = ?1",
                "record trial outcome");
  upd.bind(1, trial_id).bind(2, std::string(to_string(state)));
  state == TrialState::failed ? upd.bind_null(3) : upd.bind(3, value);  // a failure has no value
  upd.bind(4, store::utc_now()).run();
  insert_attrs(db_, trial_id, all);
  tx.commit();
}

void Study::optimize(const Objective& objective, int n_trials,
                     const std::function<void(const TrialRecord&)>& on_trial) {
  for (int i = 0; i < n_trials; ++i) {
    std::optional<Trial> trial = ask();
    if (!trial) break;  // an exhausted grid
    std::optional<Outcome> outcome;
    std::string error;
    try {
      outcome = objective(Params(space_, trial->values), trial->number);
    } catch (const std::exception& e) {  // mase::Error included: it derives from std::exception
      error = e.what();
    } catch (...) {
      // Something we cannot describe (not a std::exception): record it, then let it go on up.
      tell(trial->number, TrialState::failed, 0, {{"error", "a non-standard exception"}});
      throw;
    }
    if (outcome && outcome->state == TrialState::running) {
      outcome.reset();  // not a final state: a bug in the objective, recorded like a throw
      error = "the objective returned state running (expected complete or pruned)";
    }
    if (outcome)
      tell(trial->number, outcome->state, outcome->value, outcome->attrs);
    else
      tell(trial->number, TrialState::failed, 0, {{"error", error}});
    if (on_trial) on_trial(load_trials(db_, study_id_, space_, trial->number).at(0));
  }
}

// --- reading the results ---

std::string Study::path() const { return store::path_of(db_); }

std::vector<TrialRecord> Study::trials() const { return load_trials(db_, study_id_, space_); }

std::optional<TrialRecord> Study::best() const {
  std::optional<TrialRecord> best;
  for (TrialRecord& r : trials()) {  // by number: a tie keeps the earlier trial
    if (r.trial.state != TrialState::complete) continue;
    bool better = !best || (direction_ == Direction::maximize ? r.trial.value > best->trial.value
                                                              : r.trial.value < best->trial.value);
    if (better) best = std::move(r);
  }
  return best;
}

void Study::write_csv(const std::string& path) const {
  const std::vector<TrialRecord> all = trials();
  std::set<std::string> attr_names;  // sorted: the columns do not depend on trial order
  for (const TrialRecord& r : all)
    for (const auto& [name, text] : r.attrs) attr_names.insert(name);

  // Each cell is preceded by its comma; the first cell of a line (number) has none.
  std::string text = "number,state,value";
  auto cell = [&text](const std::string& field) { (text += ',') += csv_field(field); };
  for (const Param& p : space_.params()) cell(p.name);
  for (const std::string& a : attr_names) cell(a);
  text += '\n';
  for (const TrialRecord& r : all) {
    const Trial& t = r.trial;
    bool has_value = t.state == TrialState::complete || t.state == TrialState::pruned;
    text += std::to_string(t.number);
    cell(to_string(t.state));
    cell(has_value ? shortest(t.value) : "");
    for (const Param& p : space_.params()) {
      auto it = t.values.find(p.name);
      cell(it == t.values.end() ? "" : p.format(it->second));
    }
    for (const std::string& a : attr_names) {
      auto it = r.attrs.find(a);
      cell(it == r.attrs.end() ? "" : it->second);
    }
    text += '\n';
  }

  // whole or not at all: a reader never sees half a CSV (runtime/atomic_file.h)
  write_text_atomic(path, text);
}

}  // namespace mase::search
