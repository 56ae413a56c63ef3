// search/curve_plot.h — Lab 1's figures: y against x, one curve per method, through gnuplot;
// and Lab 4's bar charts (plot_bars).
//
// Where search/plot.h draws the running best of studies against the trial, this draws sweep
// points: accuracy against width (Lab 1.1) or against sparsity (Lab 1.2). The file's
// extension chooses gnuplot's terminal: .svg -> svg, .png -> pngcairo. Curves get a point
// marker, a dash type and a colour of their own, so two curves with equal values (PTQ and QAT
// both at fp32 accuracy for wide formats) still read as two. The numbers (<path>.dat) and the
// script (<path>.gp) are written beside the figure, so a student can restyle it and redraw
// with `gnuplot <path>.gp`.
// Read next: search/sweep_study.h (where the curves come from).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace mase::search {

struct Curve {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
};

struct CurvePlotText {
  std::string title, xlabel, ylabel = "test accuracy";
};

// Writes `path` (.svg or .png), `path`.dat and `path`.gp, each atomically. ConfigError for
// another extension or no curve; IoError if gnuplot is missing or fails (with its output).
void plot_curves(const std::vector<Curve>& curves, const CurvePlotText& text,
                 const std::string& path);

// Bars: one cluster per category, one bar per series in each (Lab 4's figures: each compiled
// variant's speed-up over eager; each benchmark's ratio to its baseline). A value that is NaN
// draws no bar. With `reference` set, a dashed line at that height: the line at 1 where a
// ratio means "as fast as the baseline".
struct BarSeries {
  std::string label;
  std::vector<double> values;  // one per category
};
struct BarChart {
  std::string title, ylabel;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  double reference = 0;  // 0: no line
};
// Writes `path` (.svg or .png), `path`.dat (a header row, then one row per category) and
// `path`.gp, as plot_curves does; ConfigError when there is nothing to draw.
void plot_bars(const BarChart& chart, const std::string& path);

// gnuplot's terminal for a file name (.svg -> svg, .png -> pngcairo), or "" for another one.
std::string terminal_for(const std::string& path, int extra_width = 0, int extra_height = 0);
// Runs gnuplot on the script file `script` (which must `set output` to `tmp`), then renames
// `tmp` to `path`:
// the figure appears whole or not at all. IoError with gnuplot's own output when it fails.
// Every plot of search/ (plot.cpp, curve_plot.cpp, lab_plot.cpp) draws through here.
void run_gnuplot(const std::string& script, const std::string& tmp, const std::string& path);
// Throws the ConfigError plot_curves would for `path`'s extension, naming `flag`.
void check_plot_path(const std::string& path, const std::string& flag);

}  // namespace mase::search
