// tests/search/test_command_objective.cpp — `mase-search custom`: the --space grammar, the
// command template, and the last stdout line as the value.
// Oracles: the spaces written out by hand; the shell's own echo/printf/exit.
#include <doctest/doctest.h>

#include "runtime/error.h"
#include "search/command_objective.h"

using namespace mase;
using namespace mase::search;

TEST_CASE("custom space: real, log-real, integer and categorical items") {
  Space s = parse_space_spec("lr=real:1e-5:1e-2:log,x=real:-1:1,n=int:1:8,act=cat:relu|gelu");
  CHECK(s.params().size() == 4);
  CHECK(s.at("lr").log);
  CHECK(s.at("lr").low == 1e-5);
  CHECK(s.at("x").kind == Param::Kind::real);
  CHECK(s.at("n").kind == Param::Kind::integer);
  CHECK(s.at("n").high == 8);
  CHECK(s.at("act").choices == std::vector<std::string>{"relu", "gelu"});
}

TEST_CASE("custom space: bad items name --space and the item") {
  for (const char* bad : {"x=real:1", "x=real:2:1", "x=real:0:1:log", "x=cat:", "x=float:0:1",
                          "=real:0:1", "x=real:a:1", ""}) {
    CAPTURE(bad);
    try {
      parse_space_spec(bad);
      FAIL("no ConfigError");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("--space") != std::string::npos);
    }
  }
}

TEST_CASE("custom command: values shell-quoted in place, the last line is the value") {
  Space s = parse_space_spec("x=real:0:4,w=cat:it's|b");
  Values v = {{"x", 2.5}, {"w", 0}};
  CHECK(expand_command("f {x} {w} {trial}", s, v, 7) == "f 2.5 'it'\\''s' 7");
  CHECK(expand_command("f {w}", s, {{"x", 0}, {"w", 1}}, 0) == "f b");

  Objective f = command_objective(s, "echo starting; echo {w} >&2; echo {x}");
  Outcome o = f(Params(s, v), 0);
  CHECK(o.value == 2.5);
  CHECK(o.attrs.at("output") == "2.5");

  CHECK_THROWS_WITH_AS(command_objective(s, "echo {y}"),
                       "[search] --command: {y} is not a parameter of --space", ConfigError);
  Objective fails = command_objective(s, "echo 1; exit 3");
  CHECK_THROWS_AS(fails(Params(s, v), 1), Error);
  Objective words = command_objective(s, "echo done");
  CHECK_THROWS_AS(words(Params(s, v), 2), Error);
}
