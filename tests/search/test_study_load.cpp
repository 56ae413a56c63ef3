// tests/search/test_study_load.cpp — Study::load: a study reopened from its file alone, with the
// space, direction, sampler and seed it was created with (what `mase-search --plot` reads).
// Oracle: the study as created (its space's parameters, its trials), and the grid order of a
// sampler with the stored seed.
#include <doctest/doctest.h>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/study.h"

using namespace mase;
using namespace mase::search;
using mase::test::TempDir;

TEST_CASE("study load: the stored space, direction, sampler and seed come back") {
  TempDir dir;
  const std::string db = (dir.path / "s.db").string();
  Space space;
  space.categorical("act", {"relu", "gelu"}).integer("width", 1, 8, 3).real("lr", 1e-4, 1e-2, true);
  {
    Space grid;  // a finite space for the grid study
    grid.categorical("act", {"relu", "gelu"}).integer("width", 1, 8, 3);
    Study g = Study::open(db, "g", grid, Direction::minimize, make_sampler("grid", 7), 7);
    auto t = g.ask();
    REQUIRE(t.has_value());
    g.tell(t->number, TrialState::complete, 0.25, {{"bits", "4"}});
    Study r = Study::open(db, "r", space, Direction::maximize, make_sampler("tpe", 3), 3);
    r.tell(r.ask()->number, TrialState::complete, 0.5);
  }
  Study r = Study::load(db, "r");
  CHECK(r.direction() == Direction::maximize);
  REQUIRE(r.space().params().size() == 3);
  CHECK(r.space().at("width").high == 7);  // 1, 4, 7
  CHECK(r.space().at("lr").log);
  CHECK(r.space().at("act").choices == std::vector<std::string>{"relu", "gelu"});
  CHECK(r.trials().size() == 1);

  Study g = Study::load(db, "g");
  CHECK(g.direction() == Direction::minimize);
  auto trials = g.trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].trial.value == 0.25);
  CHECK(trials[0].attrs.at("bits") == "4");
  // The loaded study goes on with the stored sampler and seed: its next point is the one a
  // grid sampler seeded 7 gives after the first.
  Space grid;
  grid.categorical("act", {"relu", "gelu"}).integer("width", 1, 8, 3);
  GridSampler expected(7);
  auto next = expected.sample(grid, {trials[0].trial}, 1);
  CHECK(g.ask()->values == next.value());

  CHECK_THROWS_WITH_AS(Study::load(db, "nope"), doctest::Contains("(it has: g, r)"), ConfigError);
  CHECK_THROWS_AS(Study::load((dir.path / "missing.db").string(), "g"), IoError);
}
