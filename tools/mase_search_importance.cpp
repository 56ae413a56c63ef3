// tools/mase_search_importance.cpp — `mase-search importance`: which parameters of a finished
// study mattered (search/importance.h: PED-ANOVA, Optuna 5.0's get_param_importances), as a
// table, a CSV and a bar chart. It only reads the study.
// Read next: search/importance.h.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "search/curve_plot.h"
#include "search/importance.h"
#include "search/study.h"
#include "search/text.h"
#include "tools/cli.h"
#include "tools/mase_search_labs.h"

namespace mase::tools {
using namespace mase::search;
namespace fs = std::filesystem;

namespace {

const char* kImportanceHelp = R"(Which parameters mattered: for each one, how much more narrowly
the best trials (the top 10% by value) chose it than all the complete trials did — PED-ANOVA,
Optuna 5.0's default importance (optuna.importance.get_param_importances; optuna-dashboard's
chart), from 0 (no difference) to 1 (everything), summing to 1. It reads the study only.
Examples:
  mase-search importance --study tutorial-tpe
      the study in runs/search/studies.db: a table, runs/search/tutorial-tpe-importance.csv
      and .svg (a bar per parameter)
  mase-search importance --study arch-tpe --dir runs/search --target-quantile 0.2
      what it took to be in the top 20% instead
  mase-search importance --study two-tpe --storage postgresql://mase:PW@db-host/studies
      a study of several objectives: its best trials are taken as TPE takes them (Pareto
      ranks, then hypervolume))";

}  // namespace

int importance_main(int argc, char** argv) {
  CLI::App app{"mase-search importance: which parameters of a study mattered (PED-ANOVA)"};
  app.require_subcommand(1);
  CLI::App* c = app.add_subcommand("importance", "which parameters of a study mattered");
  c->footer(kImportanceHelp);
  std::string study_name, dir = "runs/search", storage, plot;
  ImportanceOptions o;
  c->add_option("--study", study_name, "the study")->required();
  c->add_option("--dir", dir, "folder of studies.db; the CSV and figure go here")
      ->capture_default_str()
      ->check(cli::nonempty("a folder"));
  c->add_option("--storage", storage, "the study's storage: sqlite:///FILE or "
                "postgresql://USER:PASSWORD@HOST:PORT/DB (default <dir>/studies.db)")
      ->check(cli::nonempty("a storage sqlite:///FILE or postgresql://..."));
  c->add_option("--plot", plot, "the figure, .svg or .png (default <dir>/<study>-importance.svg)")
      ->check(cli::nonempty("a file .svg or .png"));
  c->add_option("--target-quantile", o.target_quantile,
                "the best trials looked at: this fraction of the complete ones")
      ->capture_default_str();
  if (auto status = cli::parse(app, "mase-search", argc, argv)) return *status;
  return cli::run("mase-search", [&]() -> int {
    const std::string db = storage.empty() ? (fs::path(dir) / "studies.db").string() : storage;
    check_study_file(db);  // a missing or damaged file: one line, nothing written
    const Study study = Study::load(db, study_name);
    const std::vector<TrialRecord> trials = study.trials();
    size_t complete = 0;
    for (const TrialRecord& r : trials) complete += r.trial.state == TrialState::complete;
    MASE_CHECK(complete >= 2, ConfigError, "[importance] study '", study_name, "' expected at "
               "least 2 complete trials, got ", complete, " (run more trials first)");
    const auto importances = param_importances(trials, study.space(), study.directions(), o);
    std::printf("study     %s in %s: %zu complete trials, the best %.0f%% against all\n",
                study_name.c_str(), study.where().c_str(), complete, 100 * o.target_quantile);
    std::string csv = "parameter,importance\n";
    for (const auto& [name, value] : importances) {
      std::printf("  %-40s %.4f\n", name.c_str(), value);
      csv += cat(csv_field(name), ",", value, "\n");
    }
    fs::create_directories(dir);
    const std::string csv_path = (fs::path(dir) / (study_name + "-importance.csv")).string();
    write_text_atomic(csv_path, csv);
    std::printf("csv       %s\n", csv_path.c_str());
    if (plot.empty()) plot = (fs::path(dir) / (study_name + "-importance.svg")).string();
    BarChart chart;
    chart.title = cat(study_name, ": parameter importance (PED-ANOVA, the best ",
                      100 * o.target_quantile, "% of ", complete, " trials)");
    chart.ylabel = "importance";
    BarSeries bars{"importance", {}};
    for (const auto& [name, value] : importances) {
      chart.categories.push_back(name);
      bars.values.push_back(value);
    }
    chart.series.push_back(bars);
    try {
      plot_bars(chart, plot);
      std::printf("plot      %s\n", plot.c_str());
    } catch (const IoError& e) {  // no gnuplot: the table and CSV are the answer
      std::printf("warning   no figure: %s\n", e.what());
    }
    return 0;
  });
}

}  // namespace mase::tools
