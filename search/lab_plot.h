// search/lab_plot.h — the lab commands' figures through gnuplot: SVG or PNG by the output's
// extension, a title (model and budget), a legend, and curves told apart by colour, dash
// pattern and point marker (so two curves on top of each other both stay visible).
//
//   plot_best_so_far   one running-best curve per study (Labs 2.1, 2.2, 3.1, 3.2)
//   plot_pareto        accuracy against an attribute (average weight bits, parameters) for
//                      every trial, and the Pareto front (the trials no other trial beats on
//                      both) as a line
//   plot_intermediate  each trial's accuracy during training, pruned trials marked (--pruner)
// Beside the figure: <figure>.dat (the numbers) and <figure>.gp (the script; `gnuplot F.gp`
// redraws it after an edit). IoError if gnuplot is missing or fails.
// Read next: search/plot.h (the plain Lab 2 figure), search/lab_commands.h.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "search/study.h"

namespace mase::search {

using Series = std::vector<std::pair<std::string, std::vector<TrialRecord>>>;  // label, trials

void plot_best_so_far(const Series& series, const std::string& title, const std::string& ylabel,
                      const std::string& path, Direction direction = Direction::maximize);

// Complete trials with attribute `x_attr`, x = that attribute (lower is better), y = attribute
// "accuracy" if the trial has one (its value may weigh bits in), else the value (objective 0
// in a study of several). Large x (100k and more: parameter counts) reads 2.5M on the axis.
void plot_pareto(const Series& series, const std::string& x_attr, const std::string& title,
                 const std::string& xlabel, const std::string& path);

// One row per series (study) of what a reader compares first, written to `path` (CSV):
//   study,trials,best_accuracy,best_trial,<x_attr>_of_best,worst_accuracy,fewest_<x_attr>,
//   accuracy_at_fewest
// over the complete trials, accuracy as in plot_pareto; ties of the best: the smaller x.
// (Lab 3.2: which format keeps fp32's accuracy at how many bits, in one table.)
void write_summary_csv(const Series& series, const std::string& x_attr, const std::string& path);

// Each trial's reported accuracies against the training step (search/pruner.h): complete
// trials as solid lines, pruned ones dashed in another colour with a cross where they stopped —
// what optuna-dashboard's "intermediate values" plot shows. ConfigError when no trial reported.
void plot_intermediate(const std::vector<TrialRecord>& trials, const std::string& title,
                       const std::string& path, const std::string& xlabel = "training step",
                       const std::string& ylabel = "test accuracy");

// The trials on the Pareto front of (x_attr low, accuracy high: as in plot_pareto), sorted by x.
std::vector<TrialRecord> pareto_front(const std::vector<TrialRecord>& trials,
                                      const std::string& x_attr);

}  // namespace mase::search
