// tests/search/test_study_queue.cpp — trials an Optuna script enqueued (study.enqueue_trial)
// for a space this worker does not search: one that fixes a value the space does not have
// (or whose fixed_params are not a JSON object) is failed with its reason, and every worker's
// ask goes on to the next queued trial or the sampler. The trials are written through the
// storage API (store::Database, store::Statement) as Optuna's enqueue_trial writes them: a
// WAITING row with no start time and a "fixed_params" system attribute. Oracles: the rows as
// raw SQL sees them, and the trials two workers are handed.
#include <doctest/doctest.h>

#include <memory>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/study.h"
#include "search/study_store.h"
#include "search/study_test_util.h"

using namespace mase;
using namespace mase::search;
using namespace mase::search::test_util;
using mase::test::TempDir;

namespace {

// Optuna's enqueue_trial(fixed): trial `number`, WAITING, fixed_params = `fixed_json`.
void enqueue(const std::string& path, int64_t number, const std::string& fixed_json) {
  std::unique_ptr<store::Database> db = store::open_database(path);
  store::Transaction tx(*db);
  store::Statement ins(*db,
                       "INSERT INTO trials(number, study_id, state) SELECT ?1, study_id, "
                       "'WAITING' FROM studies WHERE study_name = 'q' RETURNING trial_id",
                       "enqueue");
  REQUIRE(ins.bind(1, number).step());
  const int64_t id = ins.int64(0);
  ins.reset();
  store::Statement attr(*db,
                        "INSERT INTO trial_system_attributes(trial_id, key, value_json) "
                        "VALUES(?1, 'fixed_params', ?2)",
                        "enqueue");
  attr.bind(1, id).bind(2, fixed_json).run();
  tx.commit();
}

std::string state_of(const std::string& path, int number) {
  return query_one(path, "SELECT state FROM trials WHERE number = " + std::to_string(number));
}

}  // namespace

TEST_CASE("queue: an enqueued trial the space cannot run is failed, and the asks go on") {
  TempDir dir;
  const std::string path = dir.file("studies.db");
  Space space;
  space.integer("x", 0, 10).categorical("act", {"relu", "gelu"});
  Study a = Study::open(path, "q", space, Direction::maximize,
                        std::make_unique<RandomSampler>(3), 3);
  enqueue(path, 0, R"({"x": 42})");                  // outside x's range
  enqueue(path, 1, R"({"x": 4, "act": "gelu"})");    // a trial this space has
  enqueue(path, 2, R"({"act": "tanh"})");            // a choice the space lacks
  enqueue(path, 3, R"([1, 2])");                     // not an object
  Study b = Study::load(path, "q");                  // a second worker on the same study

  const Trial t1 = *a.ask();  // 0 is failed on the way, 1 runs
  CHECK(t1.number == 1);
  const Params p1(space, t1.values);
  CHECK(p1.integer("x") == 4);
  CHECK(p1.category("act") == "gelu");
  CHECK(state_of(path, 0) == "FAIL");
  CHECK(state_of(path, 2) == "WAITING");  // not reached yet: failed only when a worker gets to it

  const Trial t2 = *b.ask(3);  // 2 and 3 are failed, the sampler draws trial 4
  CHECK(t2.number == 4);
  CHECK(state_of(path, 2) == "FAIL");
  CHECK(state_of(path, 3) == "FAIL");
  CHECK(query_one(path, "SELECT count(*) FROM trials WHERE datetime_complete IS NOT NULL AND "
                        "datetime_start IS NOT NULL AND state = 'FAIL'") == "3");

  const std::vector<TrialRecord> t = a.trials();
  REQUIRE(t.size() == 5);
  CHECK(contains(t[0].attrs.at("error"), "enqueued trial 0 fixes x = 42"));
  CHECK(contains(t[0].attrs.at("error"), "marked failed"));
  CHECK(contains(t[2].attrs.at("error"), "enqueued trial 2 fixes act = \"tanh\""));
  CHECK(contains(t[3].attrs.at("error"), "expected fixed_params as a JSON object"));
  for (int i : {0, 2, 3}) {
    CHECK(t[i].trial.state == TrialState::failed);
    CHECK_FALSE(t[i].retryable);  // not run again: its parameters would be refused again
  }
  // the refused trials count for no budget: 2 running, so a budget of 3 has room for one more
  CHECK(a.ask(3).has_value());
  CHECK_FALSE(b.ask(3).has_value());
}
