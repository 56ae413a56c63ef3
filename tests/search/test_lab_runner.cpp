// tests/search/test_lab_runner.cpp — what the lab commands (search/lab_runner.h) do around
// their trials, as plain mase-search does around its own: a --resume of a study file that is
// not there is refused before anything is created (the oracle: the folder does not exist
// afterwards), and a trial beats in trial_heartbeats while its objective runs (the oracle: the
// row as raw SQL sees it, read from inside the objective); with --workers, several processes
// share the trials of every study (the oracle: the study read back — each grid cell once, the
// pids that ran them — and the CSV the parent wrote).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/lab_commands.h"
#include "search/lab_runner.h"
#include "search/study_test_util.h"
#include "search/workers.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;
namespace fs = std::filesystem;

namespace {
// A LabRun over <dir>/studies.db with `trials` per study, its progress lines discarded.
LabRun quiet_run(const TempDir& dir, int trials) {
  LabRun run;
  run.db = dir.file("studies.db");
  run.dir = dir.path.string();
  run.trials = trials;
  run.out = std::fopen("/dev/null", "w");
  REQUIRE(run.out != nullptr);
  return run;
}
}  // namespace

TEST_CASE("lab commands: --resume of a study file that is not there writes nothing") {
  TempDir dir;
  CustomOptions o;  // `mase-search custom --space x=int:1:3 --command 'echo {x}' --resume`
  o.space = "x=int:1:3";
  o.command = "echo {x}";
  o.trials = 1;
  o.resume = true;
  o.dir = (dir.path / "s").string();
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  const std::string err = error_of<IoError>([&] { run_custom(o); });
  CHECK(contains(err, "[study] no study file " + o.dir + "/studies.db"));
  CHECK_FALSE(fs::exists(o.dir));  // no folder, no studies.db (it used to leave both)
  o.storage = "sqlite:///" + dir.file("elsewhere.db");
  CHECK(contains(error_of<IoError>([&] { run_custom(o); }), "no study file"));
  CHECK_FALSE(fs::exists(dir.file("elsewhere.db")));
  // the open itself, as every lab command calls it
  LabRun run;
  run.db = (dir.path / "t" / "studies.db").string();
  run.dir = (dir.path / "t").string();
  run.resume = true;
  run.out = o.out;
  Space space;
  space.integer("x", 1, 3);
  CHECK_THROWS_AS(open_lab_studies({LabStudy{"a", "a", "random", space, {}}}, run), IoError);
  CHECK_FALSE(fs::exists(run.dir));
  std::fclose(o.out);
}

TEST_CASE("lab commands: a trial's worker beats in trial_heartbeats while the objective runs") {
  TempDir dir;
  LabRun run = quiet_run(dir, 2);
  Space space;
  space.integer("x", 1, 3);
  std::vector<Study> studies = open_lab_studies({LabStudy{"hb", "hb", "random", space, {}}}, run);
  std::vector<std::string> seen;  // per trial: its heartbeat row's age in seconds, "" if none
  run_lab_study(studies[0], [&](const Params&, int64_t number) {
    const std::string sql =
        "SELECT CAST((julianday('now') - julianday(h.heartbeat)) * 86400 AS INTEGER) FROM "
        "trial_heartbeats h JOIN trials t USING(trial_id) WHERE t.number = " +
        std::to_string(number);
    std::string age;  // the first beat comes from the heartbeat's thread: wait for it (≤ 10 s)
    for (int i = 0; i < 200 && age.empty(); ++i) {
      age = query_one(run.db, sql);
      if (age.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    seen.push_back(age);
    return Outcome{1.0, {}};
  }, run);
  REQUIRE(seen.size() == 2);
  for (const std::string& age : seen) {
    REQUIRE_FALSE(age.empty());  // a lab trial's worker beats, as plain mase-search's does
    CHECK(std::stoi(age) < 60);
  }
  std::fclose(run.out);
}

namespace {
// Lines of a CSV that record a complete trial.
int complete_rows(const std::string& csv) {
  std::ifstream in(csv);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(",complete,") != std::string::npos;
  return n;
}
}  // namespace

TEST_CASE("lab commands: --workers 3 share a custom grid study; the parent writes the CSV") {
  TempDir dir;
  CustomOptions o;  // mase-search custom --sampler grid --space x=int:1:6 --workers 3 ...
  o.sampler = "grid";
  o.space = "x=int:1:6";
  // a barrier: the first trial waits (up to 20 s) until a second one has started, which only
  // another process can do — so at least two processes run trials, however loaded the machine
  const std::string marks = (dir.path / "started").string();
  fs::create_directories(marks);
  o.command = "touch " + marks + "/{x}; i=0; while [ $(ls " + marks +
              " | wc -l) -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo {x}";
  o.trials = 6;
  o.workers = 3;
  o.dir = (dir.path / "s").string();
  o.out = std::fopen("/dev/null", "w");
  REQUIRE(o.out != nullptr);
  const LabResult res = run_custom(o);
  if (res.worker_copy) _exit(0);  // a copy: its trials are in the study (doctest ends in the parent)
  std::fclose(o.out);
  REQUIRE(res.csvs.size() == 1);
  CHECK(complete_rows(res.csvs[0]) == 6);  // written after every copy had finished
  Space space;
  space.integer("x", 1, 6);
  const std::vector<TrialRecord> trials = Study::load(o.dir + "/studies.db", "custom").trials();
  REQUIRE(trials.size() == 6);
  std::set<double> cells;
  std::set<int64_t> pids;
  for (const TrialRecord& r : trials) {
    CHECK(r.trial.state == TrialState::complete);
    CHECK(r.trial.value == r.trial.values.at("x"));  // the command echoed its own cell
    cells.insert(r.trial.values.at("x"));
    pids.insert(r.pid);
  }
  CHECK(cells.size() == 6);  // every cell once
  MESSAGE(pids.size() << " processes ran trials");
  CHECK(pids.size() >= 2);
}

TEST_CASE("lab commands: --workers moves on to the next study when one's trials are all taken") {
  // Two studies, as a lab command runs them one after the other: each process walks both, so
  // the second study's trials run in several processes too (a Workers over both studies).
  TempDir dir;
  LabRun run = quiet_run(dir, 4);
  Space space;
  space.integer("x", 1, 4);
  std::vector<Study> studies = open_lab_studies(
      {LabStudy{"a", "a", "grid", space, {}}, LabStudy{"b", "b", "grid", space, {}}}, run);
  Workers w(2, std::span<Study>(studies));
  int status = 0;
  try {
    for (Study& s : studies) {
      // a barrier per study: a trial waits (up to 20 s) until the study has two trials, and a
      // process waiting here cannot claim another — so each study's first two trials are run
      // by different processes, unless a process stopped after the first study
      const std::string count_sql =
          "SELECT COUNT(*) FROM trials JOIN studies USING(study_id) WHERE study_name = '" +
          s.name() + "'";
      run_lab_trials(s, [&](const Params& p, int64_t) {
        for (int i = 0; i < 400 && std::stoi(query_one(run.db, count_sql)) < 2; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return Outcome{static_cast<double>(p.integer("x")), {}};
      }, run);
    }
  } catch (...) {
    status = 1;
  }
  if (w.is_copy()) _exit(status);
  REQUIRE(status == 0);
  CHECK(w.wait() == 0);
  std::fclose(run.out);
  for (Study& s : studies) {
    const std::vector<TrialRecord> trials = s.trials();
    CHECK(trials.size() == 4);
    std::set<int64_t> pids;
    std::set<double> cells;
    for (const TrialRecord& r : trials) {
      CHECK(r.trial.state == TrialState::complete);
      cells.insert(r.trial.values.at("x"));
      pids.insert(r.pid);
    }
    CHECK(cells.size() == 4);
    CHECK(pids.size() == 2);  // both processes took trials of both studies
  }
}
