// search/sweep_study.h — a Lab 1 sweep as a study: every point once, in order, resumable, then
// a CSV with one row per point and a figure with one curve per method.
//
// A sweep is a finite list of points (width × {ptq, qat}, or sparsity × method × ...), each a
// trial of a study in the studies database (search/study.h), so it shares Lab 2's storage:
// `mase-search --plot` and any SQLite client read it, and a sweep that was stopped (Ctrl-C, a
// crash, a reboot) continues where it was when run again — complete points are skipped, points
// of a dead process are marked failed and done again.
//
// The sampler hands the points out in the order the sweep lists them (cheap curves first), and
// calls itself "grid" because it is one: every point of a finite space exactly once, failed
// points again, so Study::load (which rebuilds a study's sampler by name) reads a sweep too.
//
// What the points compute (the objective: which model, which test reviews, how many training
// steps...) is not in the space, so a sweep also records it, as JSON, in a table of its own
// (sweep_objectives(study, objective_json)) in the same file. Re-running a study name with a
// different objective or space is a ConfigError before anything is written: the points already
// there would otherwise mix two experiments on one curve.
// Read next: search/width_sweep.h and search/sparsity_sweep.h (the two sweeps).
#pragma once
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "search/curve_plot.h"
#include "search/study.h"

namespace mase::search {

// Every point of `points` once, in that order; a failed point is free again, except those in
// `skip` (points that failed in this process: not retried until the next run).
class OrderedGridSampler : public Sampler {
 public:
  explicit OrderedGridSampler(std::vector<Values> points) : points_(std::move(points)) {}
  std::string name() const override { return "grid"; }
  std::optional<Values> sample(const Space& space, const std::vector<Trial>& history,
                               int64_t number) override;
  std::set<Values> skip;

 private:
  std::vector<Values> points_;
};

// How a sweep's trials become rows and curves.
struct SweepLayout {
  std::string x_param;                  // the x axis: "width", "sparsity"
  std::vector<std::string> label_params;  // the parameters that tell curves apart, in order
  std::function<std::string(const Params&)> curve_label;  // e.g. "PTQ", "l1-norm, local"
  std::vector<std::string> attr_columns;  // attributes written after "accuracy"
};

struct SweepPlan {
  std::string db, study;  // the SQLite file and the study's name
  Space space;
  std::vector<Values> points;  // the points this run asks for, in order (a subset of space)
  nlohmann::json objective;    // what the points compute (compared on re-runs)
  SweepLayout layout;
  std::string summary;            // one line saying what the sweep is (printed once opened)
  CurvePlotText text;             // the figure's title and axes
  std::string csv;                // the CSV to write
  std::vector<std::string> plots;  // the figures to draw (.svg, .png)
};

// A plan with its files: <dir>/studies.db, study `study`, <dir>/<study>.csv, and `plots` (none
// given: <dir>/<study>.svg and <dir>/<study>.png).
SweepPlan sweep_files(const std::string& dir, const std::string& study,
                      const std::vector<std::string>& plots);

// Opens (or creates) the study after checking the recorded objective: ConfigError naming the
// study and the first difference, with nothing changed in the file.
Study open_sweep(const SweepPlan& plan, OrderedGridSampler*& sampler);

// What evaluates one point: the accuracy and attributes (search/study.h's Outcome).
using PointFn = std::function<Outcome(const Params&)>;

// Runs the plan: every point not yet complete, one progress line per point on `out` (flushed),
// then the CSV and the figures. A point that throws is recorded failed with its message and the
// sweep goes on; three failures in a row end it with that error (something every point trips
// over, such as missing data). Stops between points when train::stop_requested(). After the
// outputs, an Error if any point of this call failed (so the command's exit status says so).
// Returns the number of points evaluated by this call.
int run_sweep(const SweepPlan& plan, const PointFn& evaluate, std::FILE* out);

// The CSV and figures of the plan's study as it is now (also what run_sweep ends with):
// CSV columns curve, <label params>, <x>, accuracy, <attrs>, trial; rows by curve, then x.
void write_sweep_outputs(const SweepPlan& plan, const Study& study, std::FILE* out);

// Parameter values as a study stores them: a list of numbers as a categorical's choices.
std::vector<std::string> choices_of(const std::vector<double>& xs);

}  // namespace mase::search
