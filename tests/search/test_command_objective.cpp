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
                       "[search] --command: expected each {name} to be a parameter of --space "
                       "or {trial}, got {y}",
                       ConfigError);
  Objective fails = command_objective(s, "echo 1; exit 3");
  CHECK_THROWS_AS(fails(Params(s, v), 1), Error);
  Objective words = command_objective(s, "echo done");
  CHECK_THROWS_AS(words(Params(s, v), 2), Error);
}

TEST_CASE("custom space: int bounds must be whole numbers within 2^53 and errors say what they got") {
  // found by fuzz/targets.h's space_spec: 1e300 was cast to int64 (undefined; the message then
  // named INT64_MIN), 0.5 quietly became 0, and the errors echoed a long item whole
  CHECK_THROWS_WITH_AS(parse_space_spec("n=int:1e300:1e301"),
                       "[search] --space item 'n=int:1e300:1e301': expected whole LOW and HIGH "
                       "within ±2^53 for int, got 1e300 and 1e301",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("n=int:0.5:8"),
                       doctest::Contains("expected whole LOW and HIGH within ±2^53 for int, got 0.5 and 8"),
                       ConfigError);
  CHECK(parse_space_spec("n=int:-9007199254740992:9007199254740992").at("n").high == 0x1p53);
  CHECK_THROWS_WITH_AS(parse_space_spec("x=real:2:1"),
                       "[search] --space item 'x=real:2:1': expected LOW < HIGH, got 2 and 1",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("x=real:0:1:log"),
                       "[search] --space item 'x=real:0:1:log': expected 0 < LOW < HIGH on a log "
                       "scale, got 0 and 1",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec(" "), doctest::Contains("--space, got none"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("x=float:0:1"),
                       doctest::Contains("expected each --space item to be name=real:LOW:HIGH[:log], "
                                         "name=int:LOW:HIGH[:log] or name=cat:A|B, got 'x=float:0:1'"),
                       ConfigError);
  // a name --command cannot name: "{a}b}" would be read as {a}
  CHECK_THROWS_WITH_AS(parse_space_spec("a}b=real:0:1"),
                       "[search] --space item 'a}b=real:0:1': expected a name without { or } "
                       "(--command names it as {name}), got 'a}b'",
                       ConfigError);
  try {
    parse_space_spec("x=real:0:" + std::string(5000, '1') + "z");
    FAIL("no ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).size() < 300);
  }
}

TEST_CASE("custom space: spaces around items, names, fields and choices are not part of them") {
  // "x=…, y=…" is how people write lists: the second name used to be " y", which --command
  // cannot name ({ y} is not {y}), so every trial failed on the placeholder
  Space s = parse_space_spec(" x = real : -1 : 1 , n=int:1:8,\tact=cat: relu | gelu ");
  CHECK(s.params().size() == 3);
  CHECK(s.at("x").low == -1);
  CHECK(s.at("n").high == 8);
  CHECK(s.at("act").choices == std::vector<std::string>{"relu", "gelu"});
  CHECK_NOTHROW(command_objective(s, "echo {x} {n} {act}"));
}

TEST_CASE("space: a real range wider than a double is refused (every draw would be HIGH)") {
  CHECK_THROWS_WITH_AS(parse_space_spec("x=real:-1e308:1e308"),
                       doctest::Contains("expected a finite width high - low"), ConfigError);
  CHECK_NOTHROW(parse_space_spec("x=real:-1e307:1e307"));
  CHECK_NOTHROW(parse_space_spec("x=real:1e-300:1e300:log"));  // a log range is fine
}

TEST_CASE("custom space: an empty item (a comma or | too many) is an error naming its place") {
  // 'x=int:1:3,' used to be read as x alone, 'a|b|' as a|b, and 'x=real:0:1:' as real 0..1: a
  // typo the search then ran without a word. Now one line, as the sweeps' lists (sweep_list.h).
  const std::string grammar =
      "name=real:LOW:HIGH[:log], name=int:LOW:HIGH[:log] or name=cat:A|B";
  CHECK_THROWS_WITH_AS(parse_space_spec("x=int:1:3,"),
                       ("[--space] expected " + grammar + " as item 2 of 'x=int:1:3,', got an "
                        "empty item (drop the extra ',')").c_str(),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("x=int:1:3, ,y=real:0:1"),
                       doctest::Contains("as item 2 of 'x=int:1:3, ,y=real:0:1', got an empty item"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec(",,"), doctest::Contains("as item 1 of ',,'"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("act=cat:relu|gelu|"),
                       "[--space] expected a choice as item 3 of 'relu|gelu|', got an empty item "
                       "(drop the extra '|')",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("act=cat:relu||gelu"), doctest::Contains("item 2 of"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_space_spec("x=real:0:1:"),
                       ("[search] expected each --space item to be " + grammar +
                        ", got 'x=real:0:1:'").c_str(),
                       ConfigError);
  CHECK(parse_space_spec(" x=int:1:3 , y=cat: a | b ").params().size() == 2);  // blanks are fine
}

TEST_CASE("custom objectives: the last line's numbers, one per objective, by blanks or commas") {
  CHECK(output_values("2.5", 1) == std::vector<double>{2.5});
  CHECK(output_values(" 2.5 \r", 1) == std::vector<double>{2.5});
  CHECK(output_values("0.25 4", 2) == std::vector<double>{0.25, 4});
  CHECK(output_values("0.25\t 4 ", 2) == std::vector<double>{0.25, 4});
  CHECK(output_values("0.25, 4", 2) == std::vector<double>{0.25, 4});
  CHECK(output_values("1,2,3e-3", 3) == std::vector<double>{1, 2, 3e-3});
  const std::string two = "[search] expected 2 numbers (one per objective, separated by spaces "
                          "or commas) on the last line of the command's stdout, got ";
  CHECK_THROWS_WITH_AS(output_values("1 2 3", 2), (two + "3 in '1 2 3'").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("0.5", 2), (two + "1 in '0.5'").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("", 2), (two + "0 in ''").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("0.5 loss", 2), (two + "'0.5 loss'").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("0.5, ", 2), (two + "'0.5, '").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("1,,2", 2), (two + "3 in '1,,2'").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("nan 1", 2), (two + "'nan 1'").c_str(), Error);
  CHECK_THROWS_WITH_AS(output_values("1 inf", 2), (two + "'1 inf'").c_str(), Error);
  // one objective: as before, one number and nothing else
  CHECK_THROWS_WITH_AS(output_values("1 2", 1),
                       "[search] expected a number on the last line of the command's stdout, got "
                       "'1 2'",
                       Error);
  CHECK_THROWS_AS(output_values("done", 1), Error);
}

TEST_CASE("custom objectives: a command of two objectives gives Outcome::values; a wrong line fails") {
  Space s = parse_space_spec("x=int:0:4");
  Objective f = command_objective(s, "echo starting; echo $(({x}*{x})), $((({x}-2)*({x}-2)))", 2);
  const Outcome o = f(Params(s, {{"x", 3}}), 0);
  CHECK(o.values == std::vector<double>{9, 1});
  CHECK(o.attrs.at("output") == "9, 1");
  Objective one = command_objective(s, "echo {x}", 2);
  CHECK_THROWS_WITH_AS(one(Params(s, {{"x", 3}}), 1),
                       doctest::Contains("expected 2 numbers (one per objective, separated by "
                                         "spaces or commas) on the last line of the command's "
                                         "stdout, got 1 in '3': echo 3"),
                       Error);
  CHECK(command_objective(s, "echo {x}")(Params(s, {{"x", 3}}), 2).values.empty());  // one: value
}

TEST_CASE("custom objectives: --directions reads maximize and minimize, nothing else") {
  CHECK(parse_directions("maximize") == std::vector<Direction>{Direction::maximize});
  CHECK(parse_directions("minimize, maximize,minimize") ==
        std::vector<Direction>{Direction::minimize, Direction::maximize, Direction::minimize});
  CHECK_THROWS_WITH_AS(parse_directions("maximize,max"),
                       "[--directions] expected maximize or minimize for each objective, got 'max'",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_directions("maximize,"),
                       "[--directions] expected maximize or minimize as item 2 of 'maximize,', "
                       "got an empty item (drop the extra ',')",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_directions(" "), doctest::Contains("got none"), ConfigError);
}
