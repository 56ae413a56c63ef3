// tests/search/test_study.cpp — studies in SQLite files: the grid visits every point once, the
// file reads back what was written, a mismatched reopen is refused, dead processes' trials are
// resumed, minimize/best, a throwing objective, CSV text, two processes sharing one study, and
// files that are not studies. The oracles are hand-listed points and hand-written text, the
// rows as raw SQL sees them, and a scripted sampler that records what the study shows it.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/study.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using test::TempDir;
using namespace mase::search::test_util;

namespace {

// act in {relu, gelu} x layers in {1, 2, 3}: 6 points.
Space grid_2x3() {
  Space s;
  s.categorical("act", {"relu", "gelu"}).integer("layers", 1, 3);
  return s;
}

// A point as the objective sees it, e.g. "gelu/3".
std::string point(const Space& space, const Values& v) {
  Params p(space, v);
  return p.category("act") + "/" + std::to_string(p.integer("layers"));
}

// Hands out the listed points in order, then nothing; keeps every history it was shown.
struct ScriptedSampler : Sampler {
  std::vector<Values> script;
  std::vector<std::vector<Trial>>* histories;
  std::vector<int64_t>* numbers;
  ScriptedSampler(std::vector<Values> s, std::vector<std::vector<Trial>>* h,
                  std::vector<int64_t>* n)
      : script(std::move(s)), histories(h), numbers(n) {}
  std::string name() const override { return "scripted"; }
  std::optional<Values> sample(const Space&, const std::vector<Trial>& history,
                               int64_t number) override {
    if (histories) histories->push_back(history);
    if (numbers) numbers->push_back(number);
    if (history.size() >= script.size()) return std::nullopt;
    return script[history.size()];
  }
};

}  // namespace

TEST_CASE("study: a grid over a 2x3 space gives each point exactly once, then nothing") {
  TempDir dir;
  Study study = Study::open(dir.file("s.db"), "grid", grid_2x3(), Direction::maximize,
                            std::make_unique<GridSampler>(7), 7);
  std::multiset<std::string> seen;
  for (int64_t n = 0; n < 6; ++n) {
    std::optional<Trial> t = study.ask();
    REQUIRE(t.has_value());
    CHECK(t->number == n);
    CHECK(t->state == TrialState::running);
    seen.insert(point(study.space(), t->values));
    study.tell(t->number, TrialState::complete, static_cast<double>(n));
  }
  CHECK(seen ==
        std::multiset<std::string>{"relu/1", "relu/2", "relu/3", "gelu/1", "gelu/2", "gelu/3"});
  CHECK_FALSE(study.ask().has_value());
  CHECK(study.trials().size() == 6);  // the empty ask inserted nothing
}

TEST_CASE("study: trials, values, states and attributes read back the same from the file") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Space space;
  space.categorical("act", {"relu", "gelu", "silu"})
      .integer("layers", 2, 8)
      .real("lr", 1e-5, 1e-2, true);
  std::vector<Trial> asked;
  {
    Study s = Study::open(path, "roundtrip", space, Direction::maximize,
                          std::make_unique<RandomSampler>(11), 11);
    for (int i = 0; i < 4; ++i) asked.push_back(s.ask().value());
    s.tell(0, TrialState::complete, 0.8125, {{"params", "1234"}, {"note", "a, \"b\""}});
    s.tell(1, TrialState::failed, 0, {{"error", "diverged"}});
    s.tell(2, TrialState::pruned, 0.25);
    // trial 3 stays running
    CHECK(contains(error_of<ConfigError>([&] { s.tell(0, TrialState::complete, 1); }),
                   "already complete"));
    CHECK(contains(error_of<ConfigError>([&] { s.tell(99, TrialState::complete, 1); }),
                   "no trial 99"));
    CHECK(
        contains(error_of<ConfigError>([&] { s.tell(3, TrialState::running, 1); }), "got running"));
  }
  Study s = Study::open(path, "roundtrip", space, Direction::maximize,
                        std::make_unique<RandomSampler>(11), 11);
  std::vector<TrialRecord> got = s.trials();
  REQUIRE(got.size() == 4);
  const std::vector<TrialState> states = {TrialState::complete, TrialState::failed,
                                          TrialState::pruned, TrialState::running};
  for (size_t i = 0; i < 4; ++i) {
    INFO("trial " << i);
    CHECK(got[i].trial.number == static_cast<int64_t>(i));
    CHECK(got[i].trial.state == states[i]);
    CHECK(got[i].trial.values == asked[i].values);  // exact: reals are stored with 17 digits
    CHECK(got[i].pid == getpid());
    CHECK(got[i].host == this_host());
    const std::string& t = got[i].started_at;  // 2024-05-01T12:34:56Z
    CHECK((t.size() == 20 && t[4] == '-' && t[10] == 'T' && t.back() == 'Z'));
    CHECK(got[i].ended_at.empty() == (states[i] == TrialState::running));
  }
  CHECK(got[0].trial.value == 0.8125);
  CHECK(got[2].trial.value == 0.25);
  CHECK(got[0].attrs ==
        std::map<std::string, std::string>{{"params", "1234"}, {"note", "a, \"b\""}});
  CHECK(got[1].attrs == std::map<std::string, std::string>{{"error", "diverged"}});
  CHECK(got[2].attrs.empty());
  // The reopened handle can finish what the first one started; a NaN counts as a failure.
  s.tell(3, TrialState::complete, std::nan(""));
  TrialRecord last = s.trials().at(3);
  CHECK(last.trial.state == TrialState::failed);
  CHECK(contains(last.attrs.at("error"), "nan"));
  // One file, several studies: another name starts empty.
  Study other =
      Study::open(path, "other", space, Direction::minimize, std::make_unique<GridSampler>(1), 1);
  CHECK(other.trials().empty());
}

TEST_CASE("study: reopening with another space, sampler or direction is a ConfigError naming it") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  auto open = [&](Space space, Direction d, const std::string& sampler) {
    return Study::open(path, "x", std::move(space), d, make_sampler(sampler, 3), 3);
  };
  open(grid_2x3(), Direction::maximize, "grid").ask();
  auto refusal = [&](Space space, Direction d, const std::string& sampler) {
    return error_of<ConfigError>([&] { open(std::move(space), d, sampler); });
  };
  std::string m = refusal(grid_2x3(), Direction::minimize, "grid");
  CHECK(contains(
      m, "[study] study 'x' in " + path + " was created with direction maximize, not minimize"));
  CHECK(contains(m, "(use another --study name or file)"));
  CHECK(contains(refusal(grid_2x3(), Direction::maximize, "random"),
                 "was created with sampler grid, not random"));
  Space wider;
  wider.categorical("act", {"relu", "gelu"}).integer("layers", 1, 4);
  CHECK(contains(refusal(wider, Direction::maximize, "grid"),
                 "was created with parameter layers: integer [1, 3] step 1, not layers: integer "
                 "[1, 4] step 1"));
  Space reordered;
  reordered.categorical("act", {"gelu", "relu"}).integer("layers", 1, 3);
  CHECK(contains(refusal(reordered, Direction::maximize, "grid"),
                 "parameter act: categorical {relu, gelu}, not act: categorical {gelu, relu}"));
  Space more = grid_2x3();
  more.integer("width", 1, 2);
  CHECK(contains(refusal(more, Direction::maximize, "grid"),
                 "no parameter width, which this space has"));
  Space fewer;
  fewer.integer("layers", 1, 3);
  CHECK(contains(refusal(fewer, Direction::maximize, "grid"),
                 "parameter act: categorical {relu, gelu}, which this space lacks"));
  // The same settings open it again, trial and all.
  CHECK(open(grid_2x3(), Direction::maximize, "grid").trials().size() == 1);
}

TEST_CASE(
    "study: resume marks the trials of dead processes failed; the grid retries their points") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  auto open = [&] {
    return Study::open(path, "r", grid_2x3(), Direction::maximize, std::make_unique<GridSampler>(5),
                       5);
  };
  std::string lost_point;
  {
    Study s = open();
    lost_point = point(s.space(), s.ask()->values);  // trial 0: its process will "die"
    s.ask();                                         // trial 1: ours, still running
    s.ask();                                         // trial 2: another host's
    s.ask();                                         // trial 3: another live process's
  }
  // 2^22 + 12345 is above Linux's largest pid (2^22): no process can have it.
  // (pid and host are trial system attributes in Optuna's schema: search/optuna_schema.h)
  auto set_attr = [&](int number, const std::string& key, const std::string& json) {
    raw_sql(path, "UPDATE trial_system_attributes SET value_json = '" + json + "' WHERE key = '" +
                      key + "' AND trial_id = (SELECT trial_id FROM trials WHERE number = " +
                      std::to_string(number) + ")");
  };
  set_attr(0, "mase:pid", "4206649");
  set_attr(2, "mase:pid", "4206649");
  set_attr(2, "mase:host", "\"some-other-host\"");
  set_attr(3, "mase:pid", std::to_string(getppid()));

  Study s = open();
  CHECK(s.resume() == 1);
  std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 4);
  CHECK(t[0].trial.state == TrialState::failed);
  CHECK_FALSE(t[0].ended_at.empty());
  CHECK(contains(t[0].attrs.at("error"), "4206649"));
  CHECK(t[1].trial.state == TrialState::running);  // this process is alive
  CHECK(t[2].trial.state == TrialState::running);  // its pid means nothing on this host
  CHECK(t[3].trial.state == TrialState::running);  // our parent process is alive
  CHECK(s.resume() == 0);

  s.tell(1, TrialState::complete, 1);
  s.tell(2, TrialState::complete, 2);
  s.tell(3, TrialState::complete, 3);
  std::multiset<std::string> done;
  for (const TrialRecord& r : s.trials())
    if (r.trial.state == TrialState::complete) done.insert(point(s.space(), r.trial.values));
  std::vector<std::string> retried;
  while (std::optional<Trial> next = s.ask()) {
    done.insert(point(s.space(), next->values));
    if (point(s.space(), next->values) == lost_point) retried.push_back(lost_point);
    s.tell(next->number, TrialState::complete, 0);
  }
  CHECK(done ==
        std::multiset<std::string>{"relu/1", "relu/2", "relu/3", "gelu/1", "gelu/2", "gelu/3"});
  CHECK(retried.size() == 1);     // the failed trial's point came back once
  CHECK(s.trials().size() == 7);  // 6 complete + the failed one
}

TEST_CASE("study: minimize shows the sampler -value; best() is the lowest, ties to the earliest") {
  TempDir dir;
  Space space;
  space.integer("x", -10, 10);
  auto run = [&](const std::string& name, Direction d, const std::vector<double>& xs,
                 std::vector<std::vector<Trial>>* histories, std::vector<int64_t>* numbers) {
    std::vector<Values> script;
    for (double x : xs) script.push_back({{"x", x}});
    Study s = Study::open(dir.file("s.db"), name, space, d,
                          std::make_unique<ScriptedSampler>(script, histories, numbers), 0);
    CHECK_FALSE(s.best().has_value());  // nothing complete yet
    s.optimize([](const Params& p, int64_t) { return Outcome{p.real("x"), {}}; }, 100);
    return s;
  };
  std::vector<std::vector<Trial>> histories;
  std::vector<int64_t> numbers;
  Study lo = run("min", Direction::minimize, {3, 7, -4, 5}, &histories, &numbers);
  REQUIRE(lo.best().has_value());
  CHECK(lo.best()->trial.number == 2);
  CHECK(lo.best()->trial.value == -4);  // stored as the objective returned it
  CHECK(numbers == std::vector<int64_t>{0, 1, 2, 3, 4});
  REQUIRE(histories.size() == 5);
  std::vector<double> shown;
  for (const Trial& t : histories.back()) shown.push_back(t.value);
  CHECK(shown == std::vector<double>{-3, -7, 4, -5});
  CHECK_FALSE(lo.ask().has_value());  // the script is spent
  CHECK(lo.trials().size() == 4);

  Study hi = run("max", Direction::maximize, {2, 9, 9, -1}, nullptr, nullptr);
  CHECK(hi.best()->trial.number == 1);  // 9 twice: the earlier trial
  std::vector<double> hi_values;
  for (const TrialRecord& r : hi.trials()) hi_values.push_back(r.trial.value);
  CHECK(hi_values == std::vector<double>{2, 9, 9, -1});  // not negated in the file
}

TEST_CASE("study: best() skips pruned and failed trials") {
  TempDir dir;
  Space space;
  space.integer("x", 0, 9);
  std::vector<Values> script = {{{"x", 1}}, {{"x", 2}}, {{"x", 3}}};
  Study s = Study::open(dir.file("s.db"), "b", space, Direction::maximize,
                        std::make_unique<ScriptedSampler>(script, nullptr, nullptr), 0);
  for (int i = 0; i < 3; ++i) s.ask();
  s.tell(0, TrialState::complete, 1);
  s.tell(1, TrialState::pruned, 50);
  s.tell(2, TrialState::failed, 99);
  CHECK(s.best()->trial.number == 0);
  CHECK(s.trials()[2].trial.value == 0);  // a failure keeps no value
}

TEST_CASE("study: optimize records a throwing objective's trial as failed and goes on") {
  TempDir dir;
  Study s = Study::open(dir.file("s.db"), "o", grid_2x3(), Direction::maximize,
                        std::make_unique<GridSampler>(3), 3);
  auto objective = [](const Params& p, int64_t number) -> Outcome {
    if (number == 2) throw ConfigError("boom: bad config");
    if (number == 4) throw std::runtime_error("plain failure");
    if (number == 5) return {1.0, {}, TrialState::running};  // not a final state
    return {static_cast<double>(p.integer("layers")), {{"number_seen", std::to_string(number)}}};
  };
  std::vector<std::pair<int64_t, TrialState>> reported;
  s.optimize(objective, 100,
             [&](const TrialRecord& r) { reported.emplace_back(r.trial.number, r.trial.state); });

  std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 9);  // 6 points + the 3 failed ones handed out again; then the grid stops
  std::multiset<std::string> done;
  for (const TrialRecord& r : t) {
    INFO("trial " << r.trial.number);
    const std::map<int64_t, std::string> errors = {
        {2, "boom: bad config"},
        {4, "plain failure"},
        {5, "the objective returned state running (expected complete or pruned)"}};
    if (errors.count(r.trial.number)) {
      CHECK(r.trial.state == TrialState::failed);
      CHECK(r.attrs.at("error") == errors.at(r.trial.number));
    } else {
      CHECK(r.trial.state == TrialState::complete);
      CHECK(r.trial.value == Params(s.space(), r.trial.values).integer("layers"));
      CHECK(r.attrs.at("number_seen") == std::to_string(r.trial.number));
      done.insert(point(s.space(), r.trial.values));
    }
  }
  CHECK(done.size() == 6);
  CHECK(std::set<std::string>(done.begin(), done.end()).size() == 6);
  REQUIRE(reported.size() == 9);
  for (size_t i = 0; i < reported.size(); ++i) {
    CHECK(reported[i].first == static_cast<int64_t>(i));
    CHECK(reported[i].second == t[i].trial.state);
  }
  // n_trials bounds the loop too.
  Study few = Study::open(dir.file("s.db"), "few", grid_2x3(), Direction::maximize,
                          std::make_unique<GridSampler>(3), 3);
  few.optimize(objective, 2);
  CHECK(few.trials().size() == 2);
}

TEST_CASE("study: write_csv writes one quoted row per trial, params in space order, attrs sorted") {
  TempDir dir;
  Space space;
  space.real("lr", 1e-3, 1, true).integer("layers", 2, 8).categorical("act", {"relu", "gelu"});
  std::vector<Values> script = {{{"act", 0}, {"layers", 4}, {"lr", 0.5}},
                                {{"act", 1}, {"layers", 2}, {"lr", 0.25}},
                                {{"act", 1}, {"layers", 8}, {"lr", 0.125}},
                                {{"act", 0}, {"layers", 3}, {"lr", 0.5}}};
  Study s = Study::open(dir.file("s.db"), "csv", space, Direction::maximize,
                        std::make_unique<ScriptedSampler>(script, nullptr, nullptr), 0);
  for (int i = 0; i < 4; ++i) s.ask();
  s.tell(0, TrialState::complete, 0.75, {{"bits", "8"}});
  s.tell(1, TrialState::failed, 0, {{"error", "out of memory, again"}});
  s.tell(2, TrialState::pruned, 0.5, {{"note", "said \"hi\""}});
  const std::string path = dir.file("trials.csv");
  { std::ofstream(path) << "old content\n"; }  // replaced whole
  s.write_csv(path);
  const std::vector<std::string> expected = {
      "number,state,value,act,layers,lr,bits,error,note",
      "0,complete,0.75,relu,4,0.5,8,,",
      "1,failed,,gelu,2,0.25,,\"out of memory, again\",",
      "2,pruned,0.5,gelu,8,0.125,,,\"said \"\"hi\"\"\"",
      "3,running,,relu,3,0.5,,,",
  };
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == expected.size());
  for (size_t i = 0; i < lines.size(); ++i) CHECK(lines[i] == expected[i]);
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    CHECK(e.path().string().find(".tmp") == std::string::npos);  // no temporary file left
  // the folder is created when missing; a path through a regular file cannot be written
  s.write_csv(dir.file("new/dir/trials.csv"));
  CHECK(std::filesystem::exists(dir.file("new/dir/trials.csv")));
  std::ofstream(dir.file("blocker")) << "a file, not a folder";
  CHECK_THROWS_AS(s.write_csv(dir.file("blocker/trials.csv")), IoError);
}

TEST_CASE("study: two processes share one grid study; every point is run exactly once") {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  Space space;
  space.categorical("a", {"w", "x", "y", "z"}).integer("b", 0, 2);  // 12 points
  auto open = [&] {
    return Study::open(path, "shared", space, Direction::maximize, std::make_unique<GridSampler>(9),
                       9);
  };
  auto objective = [](const Params& p, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the other process asks meanwhile
    return Outcome{static_cast<double>(p.integer("b")), {}};
  };
  open();  // create the file before forking: no SQLite connection may cross a fork
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child reports through its exit status only, and leaves with _exit so that doctest's
    // teardown runs once, in the parent.
    int status = 0;
    try {
      Study s = open();
      char go = 1;
      if (write(ready[1], &go, 1) != 1) status = 2;
      s.optimize(objective, 100);
    } catch (...) {
      status = 1;
    }
    _exit(status);
  }
  char go = 0;
  REQUIRE(read(ready[0], &go, 1) == 1);  // start together
  close(ready[0]);
  close(ready[1]);
  Study s = open();
  s.optimize(objective, 100);
  int status = -1;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  std::vector<TrialRecord> t = s.trials();
  REQUIRE(t.size() == 12);
  std::set<std::string> points;
  std::map<int64_t, int> per_pid;
  for (size_t i = 0; i < t.size(); ++i) {
    CHECK(t[i].trial.number == static_cast<int64_t>(i));
    CHECK(t[i].trial.state == TrialState::complete);
    Params p(space, t[i].trial.values);
    points.insert(p.category("a") + std::to_string(p.integer("b")));
    ++per_pid[t[i].pid];
  }
  CHECK(points.size() == 12);  // no point twice, none missing
  CHECK(per_pid.size() == 2);  // both processes took part
  CHECK(per_pid.count(getpid()) == 1);
  CHECK(per_pid.count(child) == 1);
}

TEST_CASE("study: a file that is not a SQLite database, or cannot be created, is an IoError") {
  TempDir dir;
  const std::string junk = dir.file("junk.db");
  {
    std::ofstream out(junk);
    for (int i = 0; i < 256; ++i) out << "this is not a database\n";
  }
  auto open = [](const std::string& path) {
    Study::open(path, "s", grid_2x3(), Direction::maximize, std::make_unique<GridSampler>(0), 0);
  };
  std::string m = error_of<IoError>([&] { open(junk); });
  CHECK(contains(m, "[study]"));
  CHECK(contains(m, junk));
  CHECK(contains(m, "not a SQLite study file"));
  CHECK(contains(error_of<IoError>([&] { open(dir.file("no/such/dir/s.db")); }), "[study] open"));
  CHECK(contains(error_of<ConfigError>([&] {
                   Study::open(dir.file("s.db"), "s", grid_2x3(), Direction::maximize, nullptr, 0);
                 }),
                 "expected a sampler"));
}

TEST_CASE("study: a moved study keeps the connection; the moved-from one lets go of it") {
  TempDir dir;
  Study a = Study::open(dir.file("s.db"), "m", grid_2x3(), Direction::maximize,
                        std::make_unique<GridSampler>(1), 1);
  a.ask();
  Study b = std::move(a);
  CHECK(b.trials().size() == 1);
  Study c = Study::open(dir.file("s.db"), "n", grid_2x3(), Direction::minimize,
                        std::make_unique<GridSampler>(1), 1);
  c = std::move(b);  // c's own connection closes; it now is study "m"
  CHECK(c.name() == "m");
  CHECK(c.ask()->number == 1);
}
