// tests/search/test_plot_paths.cpp — a figure whose path (or title, or legend) holds
// characters a shell or gnuplot would expand: $HOME, a backquote, a space. gnuplot runs without
// a shell (search/curve_plot.cpp, run_gnuplot) and the scripts' strings never carry a bare
// backquote (gnuplot runs `...` as a command even inside "..."). Oracles: the figure at the
// literal path, its text, and nothing written anywhere else.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "helpers.h"
#include "models/temp_dir.h"
#include "search/curve_plot.h"
#include "search/lab_plot.h"

using namespace mase;
using namespace mase::search;
namespace fs = std::filesystem;

namespace {

// Whether `gnuplot` is on PATH (the figures need it; a machine without it skips the case).
bool gnuplot_on_path() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("plot: a figure path with $HOME, a backquote and a space is drawn where it says") {
  if (!gnuplot_on_path()) return test::skip("gnuplot is not installed (apt-get install gnuplot-nox)");
  test::TempDir dir;
  const fs::path odd = dir.path / "a $HOME `echo b` c";
  const std::string curves = (odd / "curves `echo x`.svg").string();
  plot_curves({{"ptq `echo y`", {{1, 0.5}, {2, 0.75}}}}, {"width $HOME `echo t`", "width", "acc"},
              curves);
  REQUIRE(fs::exists(curves));
  const std::string svg = text_of(curves);
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("ptq `echo y`") != std::string::npos);            // the legend, not "ptq y"
  CHECK(svg.find("width $HOME `echo t`") != std::string::npos);    // the title as written

  TrialRecord r;
  r.trial.state = TrialState::complete;
  r.trial.value = 0.5;
  const std::string best = (odd / "best $HOME.svg").string();
  plot_best_so_far({{"s `echo z`", {r}}}, "t `echo w`; x", "acc", best);
  REQUIRE(fs::exists(best));
  CHECK(text_of(best).find("t `echo w`") != std::string::npos);  // the lab figures' title

  std::vector<std::string> names;  // nothing written outside the folder asked for
  for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename());
  CHECK(names == std::vector<std::string>{"a $HOME `echo b` c"});
}

TEST_CASE("plot_intermediate: complete and pruned trials' curves, the data as reported") {
  // Oracle: the .dat beside the figure holds each trial's reports, complete ones in the first
  // block, pruned ones in the second and where they stopped in the third; the legend counts.
  test::TempDir dir;
  auto trial = [](int64_t n, TrialState s, std::map<int64_t, double> iv) {
    TrialRecord r;
    r.trial.number = n;
    r.trial.state = s;
    r.intermediate = std::move(iv);
    return r;
  };
  const std::vector<TrialRecord> trials = {
      trial(0, TrialState::complete, {{10, 0.5}, {20, 0.7}}),
      trial(1, TrialState::pruned, {{10, 0.4}}),
      trial(2, TrialState::failed, {{10, 0.1}}),  // left out
      trial(3, TrialState::complete, {})};        // reported nothing: left out
  CHECK_THROWS_AS(plot_intermediate({trials[3]}, "t", dir.file("none.svg")), ConfigError);
  if (!gnuplot_on_path()) return test::skip("gnuplot is not installed (apt-get install gnuplot-nox)");
  const std::string path = dir.file("curves.svg");
  plot_intermediate(trials, "study: accuracy", path);
  REQUIRE(fs::exists(path));
  const std::string svg = text_of(path);
  CHECK(svg.find("complete (1)") != std::string::npos);
  CHECK(svg.find("pruned (1)") != std::string::npos);
  CHECK(text_of(path + ".dat") ==
        "# trial 0\n10 0.5\n20 0.7\n\n\n\n# trial 1\n10 0.4\n\n\n\n10 0.4\n\n\n");
}
