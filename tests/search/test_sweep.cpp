// tests/search/test_sweep.cpp — the Lab 1 sweeps without a model: list parsing (search/text.h's
// split too) and every bad input (the flag named in one line), the pass configs a point
// builds, and run_sweep on a made-up objective: points in order, resumed without re-evaluating,
// a failing point, the CSV rows, a stop request between points, and a refused re-run (other
// objective or space) that leaves the study file unchanged.
// The oracles are hand-written lists, CSV text and file bytes.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/temp_dir.h"
#include "runtime/error.h"
#include "search/sparsity_sweep.h"
#include "search/sweep_list.h"
#include "search/sweep_study.h"
#include "search/text.h"
#include "search/width_sweep.h"
#include "train/trainer.h"

using namespace mase;
using namespace mase::search;
using test::TempDir;

namespace {

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no ConfigError";
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A plan over x in {1, 2, 3} x curve in {a, b}, curve a first; no figure (gnuplot-free).
SweepPlan toy_plan(const TempDir& dir, nlohmann::json objective = {{"budget", 1}}) {
  SweepPlan plan = sweep_files(dir.path.string(), "toy", {});
  plan.plots.clear();
  plan.space.categorical("x", {"1", "2", "3"}).categorical("curve", {"a", "b"});
  for (double c : {0.0, 1.0})
    for (double x : {0.0, 1.0, 2.0}) plan.points.push_back({{"curve", c}, {"x", x}});
  plan.objective = std::move(objective);
  plan.layout.x_param = "x";
  plan.layout.label_params = {"curve"};
  plan.layout.curve_label = [](const Params& p) { return "curve " + p.category("curve"); };
  plan.layout.attr_columns = {"note"};
  return plan;
}

}  // namespace

TEST_CASE("sweep lists: ranges steps and mixes") {
  CHECK(parse_int_list("4..8", "--widths") == std::vector<int64_t>{4, 5, 6, 7, 8});
  CHECK(parse_int_list("4..16:4, 24,32", "--widths") == std::vector<int64_t>{4, 8, 12, 16, 24, 32});
  CHECK(parse_int_list("8", "--widths") == std::vector<int64_t>{8});
  CHECK(parse_int_list("4..32", "--widths").size() == 29);
  // 0.1..0.9:0.1 has 9 values and 0.3 is 0.3, not 0.30000000000000004
  auto s = parse_real_list("0.1..0.9:0.1", "--sparsities");
  REQUIRE(s.size() == 9);
  CHECK(s[2] == 0.3);
  CHECK(s[8] == 0.9);
  CHECK(parse_real_list("0,0.5,1", "--sparsities") == std::vector<double>{0, 0.5, 1});
  CHECK(parse_name_list("l1-norm,random", "--methods", prune_methods()) ==
        std::vector<std::string>{"l1-norm", "random"});
  CHECK(format_real(0.1 + 0.2) == "0.3");
}

TEST_CASE("sweep lists: bad input names the flag") {
  CHECK(config_error([] { parse_int_list("", "--widths"); }) ==
        "[--widths] expected at least one value, got an empty list (e.g. 4..32 or 4,8,16)");
  CHECK(config_error([] { parse_int_list("4,,8", "--widths"); }).find("[--widths] expected an "
                                                                      "integer") == 0);
  CHECK(config_error([] { parse_int_list("4..x", "--widths"); }).find("got 'x'") !=
        std::string::npos);
  CHECK(config_error([] { parse_int_list("8..4", "--widths"); }) ==
        "[--widths] expected low <= high in '8..4', got 8 > 4");
  CHECK(config_error([] { parse_int_list("4,8,4", "--widths"); }) ==
        "[--widths] expected each value once, got 4 twice in '4,8,4'");
  CHECK(config_error([] { parse_real_list("0.1..0.9", "--sparsities"); })
            .find("[--sparsities] expected a step in the range") == 0);
  CHECK(config_error([] { parse_real_list(" ", "--sparsities"); }).find("empty list") !=
        std::string::npos);
  CHECK(config_error([] { parse_name_list("random,magnitude", "--methods", prune_methods()); }) ==
        "[--methods] expected one of random, l1-norm, got 'magnitude'");
  CHECK(config_error([] { parse_name_list("", "--curves", {"ptq", "qat"}); }) ==
        "[--curves] expected at least one of ptq, qat, got an empty list");
  CHECK(config_error([] { parse_frac_rule("quarter", "--frac-width"); })
            .find("[--frac-width] expected a frac width (an integer) or 'half'") == 0);
}

TEST_CASE("sweep lists: an empty item (a comma too many) is an error naming its place") {
  // the same rule and line as mase-search custom's --space (search/text.h, split_items)
  CHECK(config_error([] { parse_int_list("128,256,", "--widths"); }) ==
        "[--widths] expected an integer or a range A..B[:STEP] as item 3 of '128,256,', got an "
        "empty item (drop the extra ',')");
  CHECK(config_error([] { parse_real_list(" ,0.5", "--sparsities"); }) ==
        "[--sparsities] expected a number or a range A..B:STEP as item 1 of ' ,0.5', got an "
        "empty item (drop the extra ',')");
  CHECK(config_error([] { parse_name_list("ptq,", "--curves", {"ptq", "qat"}); }) ==
        "[--curves] expected one of ptq, qat as item 2 of 'ptq,', got an empty item (drop the "
        "extra ',')");
  CHECK(parse_int_list(" 4 , 8 ", "--widths") == std::vector<int64_t>{4, 8});
}

TEST_CASE("split, split_items: every item kept; an empty one refused by split_items") {
  using V = std::vector<std::string>;
  CHECK(split("a::b:", ':') == V{"a", "", "b", ""});
  CHECK(split("", ':').empty());
  CHECK(split_items(" a , b ", ',', "--f", "a name") == V{"a", "b"});
  CHECK(split_items("  ", ',', "--f", "a name").empty());  // the caller names an empty list
  CHECK(config_error([] { split_items("a,,b", ',', "--f", "a name"); }) ==
        "[--f] expected a name as item 2 of 'a,,b', got an empty item (drop the extra ',')");
  const std::string longer = std::string(70, 'a') + ",";
  CHECK(config_error([&] { split_items(longer, ',', "--f", "a name"); }) ==
        "[--f] expected a name as item 2 of '" + std::string(60, 'a') + "...', got an empty "
        "item (drop the extra ',')");
}

TEST_CASE("sweep lists: widths and sparsities out of range") {
  const FracRule four = parse_frac_rule("4", "--frac-width"), half = parse_frac_rule("half", "f");
  CHECK(half.frac(9) == 4);
  CHECK_NOTHROW(check_widths({4, 8, 32}, four, "--widths", "--frac-width"));
  CHECK_NOTHROW(check_widths({2, 3, 32}, half, "--widths", "--frac-width"));
  CHECK(config_error([&] { check_widths({3, 8}, four, "--widths", "--frac-width"); }) ==
        "[--frac-width] expected frac width <= width, got frac width 4 at --widths 3 "
        "(drop the narrow widths or lower the frac width)");
  CHECK(config_error([&] { check_widths({8, 33}, four, "--widths", "--frac-width"); })
            .find("[--widths] expected widths <= 32, got 33") == 0);
  CHECK(config_error([&] { check_widths({1}, parse_frac_rule("0", "f"), "--widths", "f"); })
            .find("[--widths] expected widths >= 2, got 1") == 0);
  CHECK_NOTHROW(check_sparsities({0, 0.5, 1}, "--sparsities"));
  CHECK(config_error([] { check_sparsities({0.5, 1.5}, "--sparsities"); }) ==
        "[--sparsities] expected sparsities in [0, 1], got 1.5 (the fraction of values pruned)");
  CHECK(config_error([] { check_sparsities({-0.1}, "--sparsities"); }).find("got -0.1") !=
        std::string::npos);
}

TEST_CASE("sweep pass configs: integer everywhere and prune targets") {
  nlohmann::json q = integer_config(8, 4);
  CHECK(q["by"] == "type");
  CHECK(q["default"]["config"]["name"] == "integer");
  for (const char* k : {"data_in", "weight", "bias"}) {
    CHECK(q["default"]["config"][std::string(k) + "_width"] == 8);
    CHECK(q["default"]["config"][std::string(k) + "_frac_width"] == 4);
  }
  nlohmann::json both = prune_config(0.5, "random", "global", "both", 7);
  CHECK(both["weight"] == nlohmann::json{{"sparsity", 0.5}, {"method", "random"},
                                         {"scope", "global"}, {"seed", 7}});
  CHECK(both["activation"] == both["weight"]);
  CHECK(!prune_config(0.5, "l1-norm", "local", "weight", 0).contains("activation"));
  CHECK(!prune_config(0.5, "l1-norm", "local", "activation", 0).contains("weight"));
}

TEST_CASE("sweep plans: points in order and the curves asked for") {
  WidthSweepOptions w;
  w.base.init = "RUN";
  w.base.max_len = 128;
  w.widths = {4, 8};
  w.curves = {"ptq"};
  w.dir = "d";
  SweepPlan p = width_sweep_plan(w);
  REQUIRE(p.points.size() == 2);
  CHECK(p.space.format(p.points[1]) == "mode=ptq width=8");
  CHECK(p.plots == std::vector<std::string>{"d/lab1-width.svg", "d/lab1-width.png"});
  CHECK(p.csv == "d/lab1-width.csv");

  SparsitySweepOptions s;
  s.base.init = "RUN";
  s.sparsities = {0.1, 0.5};
  s.scopes = {"local", "global"};
  s.finetune_steps = 10;
  SweepPlan sp = sparsity_sweep_plan(s);
  CHECK(sp.points.size() == 2 * 2 * 2 * 2);  // sparsity x method x scope x finetune
  // without fine-tuning first, then the methods of one scope before the next scope
  CHECK(sp.space.format(sp.points[0]) ==
        "finetune=no method=random scope=local sparsity=0.1 target=both");
  CHECK(sp.space.format(sp.points[2]) ==
        "finetune=no method=l1-norm scope=local sparsity=0.1 target=both");
  CHECK(sp.space.format(sp.points[8]).find("finetune=yes") == 0);
  CHECK(sp.layout.curve_label(Params(sp.space, sp.points[8])) ==
        "random, local, fine-tuned 10 steps");
}

TEST_CASE("run_sweep: every point once and resumed with CSV rows by curve and x") {
  TempDir dir;
  SweepPlan plan = toy_plan(dir);
  std::vector<std::string> seen;
  auto fn = [&](const Params& p) {
    seen.push_back(p.category("curve") + p.category("x"));
    Outcome o;
    o.value = std::stod(p.category("x")) / 10 + (p.category("curve") == "b" ? 0.5 : 0);
    o.attrs["note"] = "n, " + p.category("x");  // a comma: the CSV quotes it
    return o;
  };
  std::FILE* sink = std::fopen("/dev/null", "w");
  CHECK(run_sweep(plan, fn, sink) == 6);
  CHECK(seen == std::vector<std::string>{"a1", "a2", "a3", "b1", "b2", "b3"});
  const std::string csv = read(plan.csv);
  CHECK(csv ==
        "curve,curve,x,accuracy,note,trial\n"
        "curve a,a,1,0.1,\"n, 1\",0\ncurve a,a,2,0.2,\"n, 2\",1\ncurve a,a,3,0.3,\"n, 3\",2\n"
        "curve b,b,1,0.6,\"n, 1\",3\ncurve b,b,2,0.7,\"n, 2\",4\ncurve b,b,3,0.8,\"n, 3\",5\n");
  // The same command again: nothing to do, the CSV unchanged.
  CHECK(run_sweep(plan, fn, sink) == 0);
  CHECK(seen.size() == 6);
  CHECK(read(plan.csv) == csv);
  std::fclose(sink);
}

TEST_CASE("run_sweep: a failing point is recorded and retried on the next run") {
  TempDir dir;
  SweepPlan plan = toy_plan(dir);
  int calls = 0;
  bool broken = true;
  auto fn = [&](const Params& p) {
    ++calls;
    if (broken && p.category("x") == "2") throw IoError("[toy] x = 2 broke");
    return Outcome{0.5, {}};
  };
  std::FILE* sink = std::fopen("/dev/null", "w");
  // two failures (a2, b2), not in a row: the sweep goes on to the end and writes its CSV, then
  // says that points failed (a hole in the curve is an error of the command)
  CHECK_THROWS_WITH_AS(run_sweep(plan, fn, sink),
                       doctest::Contains("2 of the 6 points run failed; the last: [toy] x = 2 broke"),
                       Error);
  CHECK(calls == 6);
  CHECK(read(plan.csv).find(",2,") == std::string::npos);
  CHECK(read(plan.csv).find(",1,") != std::string::npos);
  broken = false;
  CHECK(run_sweep(plan, fn, sink) == 2);  // only the failed points again
  CHECK(calls == 8);
  std::fclose(sink);
}

TEST_CASE("run_sweep: three failures in a row stop the sweep") {
  TempDir dir;
  SweepPlan plan = toy_plan(dir);
  std::FILE* sink = std::fopen("/dev/null", "w");
  auto fn = [](const Params&) -> Outcome { throw IoError("[toy] no data"); };
  CHECK_THROWS_WITH_AS(run_sweep(plan, fn, sink),
                       doctest::Contains("3 points in a row failed; the last: [toy] no data"),
                       Error);
  std::fclose(sink);
}

TEST_CASE("run_sweep: a study name reused with another objective or space changes nothing") {
  TempDir dir;
  std::FILE* sink = std::fopen("/dev/null", "w");
  auto fn = [](const Params&) { return Outcome{0.5, {}}; };
  SweepPlan plan = toy_plan(dir);
  plan.points.resize(2);
  run_sweep(plan, fn, sink);
  const std::string db = read(plan.db);

  SweepPlan other_objective = toy_plan(dir, {{"budget", 2}});
  CHECK(config_error([&] { run_sweep(other_objective, fn, sink); }) ==
        "[--study] study 'toy' in " + plan.db +
            " was swept with budget 1, not 2 (use another --study name, or the flags it was "
            "created with)");
  SweepPlan other_space = toy_plan(dir);
  other_space.space = Space().categorical("x", {"1", "2"}).categorical("curve", {"a", "b"});
  other_space.points.resize(2);
  CHECK(config_error([&] { run_sweep(other_space, fn, sink); }).find("was created with") !=
        std::string::npos);
  CHECK(read(plan.db) == db);  // byte for byte
  std::fclose(sink);
}

TEST_CASE("run_sweep: a stop request ends the sweep after the point in progress and the rest runs next time") {
  TempDir dir;
  SweepPlan plan = toy_plan(dir);
  int calls = 0;
  auto fn = [&](const Params&) {
    if (++calls == 2) train::request_stop();  // what Ctrl-C does (train/trainer.h)
    return Outcome{0.5, {}};
  };
  std::FILE* sink = std::fopen("/dev/null", "w");
  train::clear_stop();
  CHECK(run_sweep(plan, fn, sink) == 2);
  CHECK(read(plan.csv) == "curve,curve,x,accuracy,note,trial\ncurve a,a,1,0.5,,0\ncurve a,a,2,0.5,,1\n");
  train::clear_stop();
  CHECK(run_sweep(plan, fn, sink) == 4);
  CHECK(calls == 6);
  std::fclose(sink);
}
