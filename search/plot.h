// search/plot.h — Lab 2's figure: the best objective so far against the trial number, one
// curve per study (per sampler), drawn by gnuplot (Debian's gnuplot-nox) as SVG or PNG.
//
// We write the numbers (a whitespace-separated .dat file, one block per curve) and a short
// gnuplot script next to the figure, then run `gnuplot` on it: students can edit the script
// and redraw without searching again.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "search/study.h"

namespace mase::search {

// best[i] = the best value among feasible complete trials 0..i (by trial number; feasible:
// no constraint > 0, Trial::constraints), per `direction`;
// entries before the first complete trial are NaN (not drawn).
std::vector<double> running_best(const std::vector<TrialRecord>& trials, Direction direction);

// Writes `svg_path` (.svg or .png: the extension picks the terminal; ConfigError otherwise),
// `svg_path` + ".dat" and `svg_path` + ".gp" (the script), all atomically.
// `series`: (label, trials) per curve. IoError if gnuplot is missing or fails (with its output).
void plot_running_best(const std::vector<std::pair<std::string, std::vector<TrialRecord>>>& series,
                       Direction direction, const std::string& ylabel, const std::string& svg_path);

}  // namespace mase::search
