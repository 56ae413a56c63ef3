// tests/search/test_lab_runner.cpp — what the lab commands (search/lab_runner.h) do around
// their trials, as plain mase-search does around its own: a --resume of a study file that is
// not there is refused before anything is created (the oracle: the folder does not exist
// afterwards), and a trial beats in trial_heartbeats while its objective runs (the oracle: the
// row as raw SQL sees it, read from inside the objective).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/lab_commands.h"
#include "search/lab_runner.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;
namespace fs = std::filesystem;

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
  LabRun run;
  run.db = dir.file("studies.db");
  run.dir = dir.path.string();
  run.trials = 2;
  run.out = std::fopen("/dev/null", "w");
  REQUIRE(run.out != nullptr);
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
