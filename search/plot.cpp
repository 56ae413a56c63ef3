// search/plot.cpp — running-best curves through gnuplot. Read plot.h first.
#include "search/plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "search/curve_plot.h"

namespace mase::search {
namespace fs = std::filesystem;

std::vector<double> running_best(const std::vector<TrialRecord>& trials, Direction direction) {
  std::vector<double> best;
  double b = std::numeric_limits<double>::quiet_NaN();
  for (const TrialRecord& r : trials) {
    if (r.trial.state == TrialState::complete && violation(r.trial) <= 0) {  // feasible
      double v = r.trial.value;
      bool better = direction == Direction::maximize ? v > b : v < b;
      if (std::isnan(b) || better) b = v;
    }
    best.push_back(b);
  }
  return best;
}

namespace {

// gnuplot string literal: single quotes, a single quote doubled.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

}  // namespace

void plot_running_best(const std::vector<std::pair<std::string, std::vector<TrialRecord>>>& series,
                       Direction direction, const std::string& ylabel, const std::string& svg_path) {
  MASE_CHECK(!series.empty(), ConfigError, "[plot] expected at least one study to plot, got none");
  check_plot_path(svg_path, "--plot");  // the extension picks the terminal: .svg or .png
  const fs::path svg(svg_path), dat = svg_path + ".dat", gp = svg_path + ".gp";

  // The data: one block per series (gnuplot's "index"), two blank lines between blocks.
  std::string data;
  for (const auto& [label, trials] : series) {
    data += "# " + label + ": trial best_so_far\n";
    std::vector<double> best = running_best(trials, direction);
    for (size_t i = 0; i < trials.size(); ++i) {
      if (std::isnan(best[i])) continue;
      data += cat(trials[i].trial.number, " ", best[i], "\n");
    }
    data += "\n\n";
  }
  write_text_atomic(dat.string(), data);  // whole or not at all (runtime/atomic_file.h)

  // whole-number trial ticks (at most ~10 of them); a dash type per study, so that two studies
  // with the same running best still read as two curves
  size_t most = 1;
  for (const auto& s : series) most = std::max(most, s.second.size());
  std::string script = cat(
      "set terminal ", terminal_for(svg_path), "\n",
      "set output ", quoted(svg_path + ".tmp"), "\n",
      "set xlabel 'trial'\nset ylabel ", quoted(ylabel), "\n",
      "set xtics ", std::max<size_t>(1, (most + 9) / 10), "\nset format x '%.0f'\n",
      "set key bottom right\nset grid\n",
      "plot ");
  for (size_t i = 0; i < series.size(); ++i)
    script += cat(i ? ", " : "", quoted(dat.string()), " index ", i,
                  " using 1:2 with steps linewidth 2 dashtype ", i + 1, " title ",
                  quoted(series[i].first));
  script += "\n";
  write_text_atomic(gp.string(), script);

  run_gnuplot(gp.string(), svg_path + ".tmp", svg.string());
}

}  // namespace mase::search
