// tests/search/test_heartbeat.cpp — heartbeats (search/heartbeat.h): a Heartbeat keeps its
// trial's row in trial_heartbeats fresh while it lives; resume fails the running trials of any
// host whose last beat is stale, and leaves those with a fresh beat or none. The oracle is the
// rows as raw SQL sees them, with times set by hand ("an hour ago").
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/heartbeat.h"
#include "search/study.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;

namespace {

// The WHERE clause that picks trial `number`'s rows (to leave them as another machine would).
std::string for_trial(int number) {
  return " WHERE trial_id = (SELECT trial_id FROM trials WHERE number = " +
         std::to_string(number) + ")";
}

Study open_study(const std::string& path) {
  Space space;
  space.integer("x", 0, 100);
  return Study::open(path, "hb", space, Direction::maximize, std::make_unique<RandomSampler>(1), 1);
}

}  // namespace

TEST_CASE("heartbeat: a Heartbeat refreshes its trial's row until it goes out of scope") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Study s = open_study(path);
  const int64_t n = s.ask()->number;
  int beats = 0;
  {
    Heartbeat beat(s, n, 0.02);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    beats = beat.beats();
  }
  CHECK(beats >= 2);
  CHECK(query_one(path, "SELECT count(*) FROM trial_heartbeats") == "1");  // one row, refreshed
  CHECK(query_one(path, "SELECT (julianday('now') - julianday(heartbeat)) * 86400 < 60 "
                        "FROM trial_heartbeats") == "1");
  s.tell(n, TrialState::complete, 1);
  CHECK_THROWS_AS(s.heartbeat(n), ConfigError);  // a finished trial has no worker to beat for
}

TEST_CASE("heartbeat: resume fails another host's trial whose heartbeat is stale, only that one") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Study s = open_study(path);
  for (int i = 0; i < 3; ++i) s.heartbeat(s.ask()->number);
  // All three "run on another machine": the pid rule cannot judge them.
  raw_sql(path, "UPDATE trial_system_attributes SET value_json = '\"elsewhere\"' "
                "WHERE key = 'mase:host'");
  raw_sql(path,
          "UPDATE trial_heartbeats SET heartbeat = datetime('now', '-1 hour')" + for_trial(0));
  raw_sql(path, "DELETE FROM trial_heartbeats" + for_trial(2));  // never beat (an old worker)
  CHECK(s.resume() == 1);
  const std::vector<TrialRecord> t = s.trials();
  CHECK(t[0].trial.state == TrialState::failed);
  CHECK(contains(t[0].attrs.at("error"), "no heartbeat since "));
  CHECK(contains(t[0].attrs.at("error"), "more than 60 s"));
  CHECK(t[1].trial.state == TrialState::running);  // beat a moment ago
  CHECK(t[2].trial.state == TrialState::running);  // no heartbeat row: nothing to judge by
  // Trial 1's worker goes quiet: past a short grace, its beat is stale too (times are seconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(s.resume(0.5) == 1);
  CHECK(s.trials()[1].trial.state == TrialState::failed);
}
