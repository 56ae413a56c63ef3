// search/lab_steps.h — the steps every lab command takes, in the order it takes them: check the
// flags (check_common), key the objective (budget_key), open the studies (make_run), fork the
// workers (start_workers), run the trials and draw the best-so-far figure (finish), then the
// figures of curves and fronts. Internal to search/: lab_commands.cpp (tutorial,
// compress-aware, custom) and lab_precision.cpp (precision) share them; a user calls the
// commands of lab_commands.h.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/lab_commands.h"
#include "search/lab_plot.h"
#include "search/lab_runner.h"
#include "search/pruner.h"
#include "search/workers.h"

namespace mase::search::lab_steps {

// What every trial's result depends on besides its parameters (the objective key).
nlohmann::json budget_key(const train::TrainConfig& c);

// The flags every command shares, checked before anything is written: --trials, --plot's
// extension, --device (a missing GPU: one line, before any trial), --workers (CPU only; each
// gets cores / N threads unless --threads says otherwise). Fills in --study and --plot.
void check_common(LabOptions& o, const std::string& command);

// Where the studies live and how many trials to run (lab_runner.h).
LabRun make_run(const LabOptions& o);

// --workers: the copies start once the studies are open and checked (an error is then
// printed once, not by every copy) and before the data is loaded — no thread pool (oneTBB's,
// OpenBLAS's) may be running when a process forks, and tokenizing runs on one.
// Then every process takes its --threads (check_common's cores / N by default): the data
// loading and the precision trials' PTQ evaluations as well as training (train_model sets it).
std::unique_ptr<Workers> start_workers(const LabOptions& o, std::vector<Study>& studies);

// Where a process's data-loading lines go: only the parent's are printed.
std::FILE* data_log(const LabOptions& o, const Workers& w);

// The trials run; one figure of the studies' best-so-far curves.
// Every process claims trials of each study in turn; a copy stops there. The parent waits
// for its copies, then writes a CSV per study run (or holding trials) and the figure.
LabResult finish(std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                 const std::vector<Objective>& objectives, const LabOptions& o,
                 const std::string& title, const std::string& ylabel, Workers& workers);

// The pruner's view of one study (nullptr without --pruner).
std::shared_ptr<const Pruning> pruning_for(Study& study, const std::optional<PrunerConfig>& p);

// With a pruner: each study's trials' accuracies during training (`trains`; else the values a
// command reported), one figure per study (<dir>/<study>-curves.<ext of --plot>), printed and
// added to the result.
void draw_curves(std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                 const LabOptions& o, const std::string& pruner, LabResult& res,
                 bool trains = true);

// The Pareto figure of the studies' trials, accuracy against attribute `x_attr`, at
// "<plot stem>-pareto<ext>" beside --plot: drawn, printed, added to `res`. Returns the series.
Series draw_pareto(const std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                   const LabOptions& o, const std::string& title, const std::string& x_attr,
                   const std::string& xlabel, LabResult& res);

// The sampler name the study records: nsga2 with another population is nsga2:N.
std::string with_population(const std::string& s, int64_t population);

}  // namespace mase::search::lab_steps
