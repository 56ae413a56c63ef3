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
