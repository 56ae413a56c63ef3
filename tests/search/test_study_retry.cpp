// tests/search/test_study_retry.cpp — a trial that was stopped, not wrong, runs again: Ctrl-C
// (Study::interrupted) and a dead worker (Study::resume) leave a failed, retryable trial whose
// parameters the next ask() hands out before the sampler draws, once, with Optuna's
// RetryFailedTrialCallback attributes ("failed_trial", "retry_history") as raw SQL reads them;
// a trial that failed by its own error is not retried; a chain stops after kMaxRetries; a
// budget counts the retry like any trial. The oracle is a random sampler whose draws, over a
// space of 1,000,000 values, do not repeat a value by chance.
#include <doctest/doctest.h>
#include <unistd.h>

#include "models/temp_dir.h"
#include "search/study.h"
#include "search/trial_queue.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using test::TempDir;
using namespace mase::search::test_util;

namespace {

Space wide() {
  Space s;
  s.integer("x", 0, 999999);
  return s;
}

Study open_random(const std::string& path) {
  return Study::open(path, "retry", wide(), Direction::maximize,
                     std::make_unique<RandomSampler>(7), 7);
}

// trial `number`'s system attribute `key` as stored (value_json), "" if none
std::string system_attr(const std::string& path, int number, const std::string& key) {
  return query_one(path, "SELECT a.value_json FROM trial_system_attributes a JOIN trials t ON "
                         "t.trial_id = a.trial_id WHERE t.number = " +
                             std::to_string(number) + " AND a.key = '" + key + "'");
}

}  // namespace

TEST_CASE("study retry: an interrupted trial's parameters run again first, once") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Study s = open_random(path);
  const Trial t0 = *s.ask();
  s.tell(t0.number, TrialState::complete, 1);
  const Trial t1 = *s.ask();  // a failed trial of its own error is not retried
  s.tell(t1.number, TrialState::failed, 0, {{"error", "out of range"}});
  const Trial t2 = *s.ask();
  CHECK(t2.retry_of == -1);
  s.interrupted(t2.number, "stopped by Ctrl-C");

  std::vector<TrialRecord> r = s.trials();
  REQUIRE(r.size() == 3);
  CHECK(r[2].trial.state == TrialState::failed);
  CHECK(r[2].attrs.at("error") == "stopped by Ctrl-C");
  CHECK(r[2].retryable);
  CHECK_FALSE(r[1].retryable);
  CHECK(retries_due(r) == std::vector<int64_t>{2});

  const Trial again = *s.ask();  // the sampler would draw a new x; the retry comes first
  CHECK(again.number == 3);
  CHECK(again.retry_of == t2.number);
  CHECK(again.values == t2.values);
  CHECK(system_attr(path, 3, "failed_trial") == "2");
  CHECK(system_attr(path, 3, "retry_history") == "[2]");
  CHECK(retries_due(s.trials()).empty());
  s.tell(again.number, TrialState::complete, 2);

  const Trial next = *s.ask();  // trial 2 is retried already; trial 1 failed by itself
  CHECK(next.retry_of == -1);
  CHECK(next.values != t1.values);
  CHECK(next.values != t2.values);
  CHECK(system_attr(path, static_cast<int>(next.number), "failed_trial").empty());
  CHECK(s.trials().at(3).retry_of == 2);  // read back from the file
}

TEST_CASE("study retry: a dead worker's trial is retried, and a chain stops after kMaxRetries") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Study s = open_random(path);
  const Trial first = *s.ask();
  // its worker "dies": a pid above Linux's largest (2^22) names no process
  raw_sql(path, "UPDATE trial_system_attributes SET value_json = '4206649' WHERE key = 'mase:pid'");
  CHECK(s.resume() == 1);
  CHECK(s.trials().at(0).retryable);

  int64_t last = first.number;
  for (int k = 1; k <= kMaxRetries; ++k) {  // each retry interrupted in turn
    const Trial t = *s.ask();
    CHECK(t.retry_of == last);
    CHECK(t.values == first.values);
    s.interrupted(t.number, "stopped by Ctrl-C");
    last = t.number;
  }
  CHECK(system_attr(path, static_cast<int>(last), "retry_history") == "[0, 1, 2]");
  const Trial fresh = *s.ask();  // the chain has run kMaxRetries times: a new draw
  CHECK(fresh.retry_of == -1);
  CHECK(fresh.values != first.values);
}

TEST_CASE("study retry: a budget counts the retried trial; a full budget retries nothing") {
  TempDir dir;
  const std::string path = dir.file("s.db");
  Study s = open_random(path);
  const Trial a = *s.ask(2);
  s.tell(a.number, TrialState::complete, 1);
  const Trial b = *s.ask(2);
  s.interrupted(b.number, "stopped by Ctrl-C");
  const Trial c = *s.ask(2);  // the retry takes the second place of the budget
  CHECK(c.retry_of == b.number);
  s.tell(c.number, TrialState::complete, 2);
  CHECK_FALSE(s.ask(2).has_value());
}
