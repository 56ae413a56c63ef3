// tools/mase-search — architecture search (Lab 2) with the random, grid and TPE samplers, and
// the Lab 1 sweeps as subcommands (sweep-width, sweep-sparsity: tools/sweep_cli.h).
//
//   mase-search --sampler tpe --trials 20 --model bert-tiny --max-steps 200 --train-subset 2000
//   mase-search --sampler tpe --resume                     # continue after a crash or Ctrl-C
//   mase-search --plot best.svg --compare arch-random,arch-grid,arch-tpe   # Lab 2.1's figure
//
// Each trial trains a BERT of the sampled architecture from scratch (search/objectives.h) in
// <dir>/<study>/trial-NNNN, a mase-train run folder; the study (every trial, its values, state,
// accuracy and attributes) lives in <dir>/studies.db (SQLite, Optuna's schema: optuna.load_study
// and optuna-dashboard open it; search/optuna_schema.h) and <dir>/<study>.csv, or, with
// --storage postgresql://..., in a PostgreSQL database that workers on many machines share
// (docs/scaling.md).
// Exit status: 0 done; 1 an error; 2 bad flags; 130 stopped by Ctrl-C, SIGTERM or SIGHUP (to
// this process alone too: it stops its --workers copies; resume with --resume).
// Read next: search/study.h, search/sampler.h, search/objectives.h, docs/lab2.md.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/error.h"
#include "tools/cli.h"
#include "tools/mase_search_labs.h"
#include "tools/sweep_cli.h"
#include "runtime/parallel.h"
#include "search/heartbeat.h"
#include "search/lab_plot.h"
#include "search/lab_runner.h"
#include "search/objectives.h"
#include "search/plot.h"
#include "search/study.h"
#include "search/text.h"
#include "search/worker_usage.h"
#include "search/workers.h"
#include "train/trainer.h"

using namespace mase;
using namespace mase::search;
namespace fs = std::filesystem;

namespace {

constexpr int kExitInterrupted = 130;  // 1 and 2: tools/cli.h

const char* kFooter = R"(Examples:
  mase-search --sampler random --trials 12 --data-dir ../shared/data
      Lab 2.1: 12 trials of the Lab 2 space (num_layers, num_heads, hidden_size,
      intermediate_size), each bert-tiny's recipe for 100 steps on 2,000 reviews, tested on 1,000
  mase-search --sampler tpe --trials 12 --data-dir ../shared/data       (and --sampler grid)
  mase-search --plot lab2.svg --compare arch-random,arch-grid,arch-tpe
      the best accuracy so far against the trial, one curve per sampler (gnuplot; .svg or .png)
  mase-search --sampler tpe --trials 24 --resume
      continue the study: finished trials are kept, trials of a dead process are marked failed
      and tried again, and trials run until 24 have finished
  mase-search --storage postgresql://mase:PASSWORD@db-host:5432/studies --trials 64 --resume
      one of many workers, on any machine, sharing a study in PostgreSQL (docs/scaling.md)
  mase-search --sampler tpe --trials 24 --eval-every 25 --pruner median
      a trial whose test accuracy at step 25, 50 or 75 is below the completed trials' median
      there stops early (pruned; Optuna's MedianPruner, search/pruner.h)
  mase-search --sampler tpe --trials 24 --eval-every 25 --pruner halving --prune-reduction 3
      successive halving: rungs at steps 25, 75; about 1 trial in 3 goes on past each
      (Optuna's SuccessiveHalvingPruner; --pruner hyperband: its HyperbandPruner)
Files: <dir>/studies.db (every study), <dir>/<study>.csv, <dir>/<study>/trial-NNNN/ (runs).
Exit status: 0 done, 1 error, 2 bad flags, 130 stopped (continue with --resume).
Lab commands (each has --help): mase-search tutorial (Lab 2.1), compress-aware (Lab 2.2),
  precision (Labs 3.1 and 3.2), custom (any command as the objective); importance (which
  parameters of a study mattered).)";

// "mm:ss" or "h:mm:ss"
std::string clock_time(double s) {
  auto t = static_cast<long long>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", t / 60, t % 60);
  return buf;
}

int finished(const std::vector<TrialRecord>& trials) {
  int n = 0;
  for (const auto& r : trials)
    n += r.trial.state == TrialState::complete || r.trial.state == TrialState::pruned;
  return n;
}

// Lab 2.1's figure from studies already in the database.
int run_plot(const std::string& db, const std::vector<std::string>& names, const std::string& svg) {
  MASE_CHECK(!names.empty(), ConfigError, "--plot needs the studies to draw: --compare A,B,...");
  std::vector<std::pair<std::string, std::vector<TrialRecord>>> series;
  for (const std::string& name : names) series.emplace_back(name, Study::load(db, name).trials());
  plot_running_best(series, Direction::maximize, "best test accuracy so far", svg);
  std::printf("plot      %s (data %s.dat, gnuplot script %s.gp)\n", svg.c_str(), svg.c_str(),
              svg.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && tools::is_lab_command(argv[1])) return tools::lab_main(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "importance") return tools::importance_main(argc, argv);
  CLI::App app{"mase-search: architecture search over BERT on IMDb (Lab 2)"};
  app.footer(kFooter);
  std::string sampler = "tpe", study_name, dir = "runs/search", plot, compare, storage;
  int trials = 12, workers = 1;
  bool resume = false;
  uint64_t seed = 0;
  train::TrainConfig base;  // each trial's recipe and budget; the architecture is the trial's
  base.model = "bert-tiny";
  base.max_steps = 100;
  base.train_subset = 2000;
  base.test_subset = 1000;
  base.ckpt_every = 0;
  base.log_every = 50;

  app.add_option("--sampler", sampler,
                 "random, grid or tpe (multivariate; tpe-independent: one parameter at a time)")
      ->capture_default_str();
  app.add_option("--trials", trials, "run until the study has this many finished trials")
      ->capture_default_str();
  app.add_option("--study", study_name, "study name (default arch-<sampler>)")
      ->check(cli::file_name_check());
  app.add_option("--dir", dir, "folder of studies.db, the CSVs and the trial runs")
      ->capture_default_str()
      ->check(cli::folder_to_write("a folder"));
  app.add_option("--storage", storage,
                 "where the studies live: sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB "
                 "(default <dir>/studies.db)")
      ->check(cli::nonempty("a storage sqlite:///FILE or postgresql://..."));
  app.add_option("--seed", seed, "seed of the sampler and of every trial's training")
      ->capture_default_str()
      ->check(cli::seed_check());
  app.add_flag("--resume", resume, "continue an existing study");
  app.add_option("--workers", workers,
                 "processes running trials of the study at once (--threads 0: cores / N each)")
      ->capture_default_str();
  app.add_option("--plot", plot,
                 "draw the running best of the --compare studies to this file (.svg or .png)")
      ->check(cli::nonempty("a file .svg or .png"));
  app.add_option("--compare", compare, "studies to plot, comma-separated");
  app.add_option("--model", base.model, "preset giving everything the space does not vary")
      ->capture_default_str();
  app.add_option("--max-steps", base.max_steps, "training steps per trial")->capture_default_str();
  app.add_option("--train-subset", base.train_subset, "training reviews per trial (0 = all)")
      ->capture_default_str();
  app.add_option("--test-subset", base.test_subset, "test reviews per trial (0 = all)")
      ->capture_default_str();
  app.add_option("--batch-size", base.batch_size, "reviews per step")->capture_default_str();
  app.add_option("--max-len", base.max_len, "tokens per review")->capture_default_str();
  double lr = 0;
  app.add_option("--lr", lr, "peak learning rate (default: the --model preset's recipe)");
  app.add_option("--data-dir", base.data_dir, "folder with imdb/ in it (as mase-train)")
      ->check(cli::nonempty("a folder"));
  app.add_option("--cache-dir", base.cache_dir, "tokenizer models and token caches")
      ->check(cli::nonempty("a folder"));
  app.add_option("--threads", base.threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option("--device", base.device, "where the trials train: cpu or cuda[:N]")
      ->capture_default_str();
  PruneOptions prune;
  tools::add_pruner(&app, prune, base);  // --pruner, --eval-every, --prune-* (mase_search_labs.h)

  cli::SweepCommands sweeps(app);  // sweep-width, sweep-sparsity: Lab 1 (tools/sweep_cli.h)

  if (auto status = cli::parse(app, "mase-search", argc, argv)) return *status;
  if (sweeps.chosen())
    return cli::run("mase-search", [&] {
      // a search flag before the command word is the search's, and a sweep would ignore it
      const std::string flag = cli::flag_outside(app, {});
      MASE_CHECK(flag.empty(), ConfigError, flag, " is a flag of the architecture search, not of "
                 "the sweep (put the sweep's own flags after its name; see its --help)");
      return sweeps.run();
    });

  return cli::run("mase-search", [&]() -> int {
    if (workers > 1 && base.threads == 0)  // share the cores, not oversubscribe them
      base.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / workers);
    set_num_threads(base.threads);
    const std::string db = storage.empty() ? (fs::path(dir) / "studies.db").string() : storage;
    if (!plot.empty()) {  // drawing reads the studies only: a search flag would be ignored
      const std::string flag =
          cli::flag_outside(app, {"--plot", "--compare", "--dir", "--storage", "--threads"});
      MASE_CHECK(flag.empty(), ConfigError, flag, " has no effect with --plot (it draws studies "
                 "already run; drop it)");
      return run_plot(db, split_items(compare, ',', "--compare", "a study name"), plot);
    }
    MASE_CHECK(compare.empty(), ConfigError, "--compare names the studies --plot draws; give "
               "--plot FILE.svg too");
    MASE_CHECK(trials >= 1, ConfigError, "expected --trials >= 1, got ", trials);
    MASE_CHECK(workers >= 1, ConfigError, "expected --workers >= 1, got ", workers);
    if (app.count("--lr")) base.lr = lr;
    base.seed = seed;
    base.validate();
    // a process that has touched CUDA cannot fork children that use it: --workers forks
    MASE_CHECK(workers == 1 || Device::parse(base.device).is_cpu(), ConfigError,
               "--workers ", workers, " expected --device cpu, got ", base.device, " (a forked "
               "worker cannot use the GPU: start one mase-search per GPU with --resume and "
               "CUDA_VISIBLE_DEVICES, all on the same --storage; docs/scaling.md)");
    require_device(Device::parse(base.device));  // a missing GPU: one line, before any trial
    if (study_name.empty()) study_name = "arch-" + sampler;

    // --resume continues a study file that is there: a missing, empty or damaged one is named
    // in one line before SQLite opens (and would write to) it.
    if (resume) check_study_file(db);
    const Space space = lab2_space();
    // Opened as the lab commands open theirs (search/lab_runner.h): a study that exists
    // continues only with --resume (a typo in --study must not add trials to someone else's
    // search), --resume needs one to continue, and the objective — what every trial trains —
    // is stored with it, so a --resume with another --model or budget is refused instead of
    // mixing trials that cannot be compared.
    nlohmann::json key = base.to_json();  // the objective key: what a trial's result depends on
    for (const char* k : {"threads", "out", "data_dir", "cache_dir", "log_every", "init", "device",
                          "cuda_graphs", "deterministic", "profile", "ckpt_every", "eval_every",
                          "eval_batch_size"})  // where and how a worker runs, not what it trains
      key.erase(k);
    key["objective"] = "architecture";
    const std::optional<PrunerConfig> pruner = parse_pruner(prune, base.eval_every, base.max_steps);
    if (pruner) key["pruner"] = pruner_key(*pruner, base.eval_every);
    LabRun lr;
    lr.db = db;
    lr.dir = dir;
    lr.trials = trials;
    lr.resume = resume;
    lr.seed = seed;
    std::vector<Study> opened = open_lab_studies(
        {LabStudy{study_name, study_name, sampler, space, key, Direction::maximize}}, lr);
    Study study = std::move(opened.front());
    fs::create_directories(dir);  // the CSV and the trials' runs (the study may be a server's)
    Objective objective = architecture_objective(
        space, base, fs::path(dir) / study_name, nullptr,
        pruner ? std::make_shared<const Pruning>(study, *pruner) : nullptr);
    std::printf("study     %s in %s: sampler %s, seed %llu, %d trials; each trial %s with the "
                "trial's architecture, %lld steps on %lld reviews, tested on %lld\n",
                study_name.c_str(), study.where().c_str(), sampler.c_str(),
                static_cast<unsigned long long>(seed), trials, base.model.c_str(),
                static_cast<long long>(base.max_steps), static_cast<long long>(base.train_subset),
                static_cast<long long>(base.test_subset));

    train::clear_stop();
    train::install_stop_handlers();
    Workers copies(workers, study);  // this process and workers - 1 forked copies run the loop
    // Trials run until enough have finished; a failure that is not the trial's own (no data,
    // a bad flag every trial trips over) would fail forever, so three in a row end the search.
    constexpr int kMaxFailuresInARow = 3;
    int failures_in_a_row = 0;
    std::string last_error;
    while (finished(study.trials()) < trials && !train::stop_requested()) {
      MASE_CHECK(failures_in_a_row < kMaxFailuresInARow, Error, "[search] ", kMaxFailuresInARow,
                 " trials in a row failed; the last: ", last_error,
                 " (fix it, then continue with --resume)");
      std::optional<Trial> t = study.ask(trials);  // none once the budget is finished or running
      if (!t) {  // the budget is finished or running (maybe in another worker), or the grid done
        int taken = 0;
        for (const auto& r : study.trials()) taken += r.trial.state != TrialState::failed;
        if (taken < trials)
          std::printf("done      the sampler has nothing left to try (a finished grid)\n");
        break;
      }
      auto start = std::chrono::steady_clock::now();
      std::string result;
      try {
        Outcome o = [&] {  // beats while it trains: resume on any host sees the worker alive
          Heartbeat beat(study, t->number);
          return objective(Params(space, t->values), t->number);
        }();
        study.tell(t->number, o.state, o.value, o.attrs);
        result = o.state == TrialState::pruned
                     ? cat("pruned at step ", o.attrs["pruned_at_step"], ", accuracy ", o.value)
                     : cat("accuracy ", o.value, "  params ", o.attrs["parameters"]);
        failures_in_a_row = 0;
      } catch (const std::exception& e) {
        if (train::stop_requested()) {
          // Ctrl-C stopped the trial's training: not the trial's failure, and its run's own
          // "mase-train --resume" hint would not report back to the study. Recorded failed and
          // retryable: a --resume of the search runs its parameters again first.
          study.interrupted(t->number, "stopped by Ctrl-C");
          result = "stopped by Ctrl-C (recorded failed; mase-search --resume runs it again)";
        } else {
          study.tell(t->number, TrialState::failed, 0, {{"error", e.what()}});
          result = cat("failed: ", e.what());
          last_error = e.what();
          ++failures_in_a_row;
        }
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      auto best = study.best();
      char best_text[64] = "no trial finished yet";
      if (best)
        std::snprintf(best_text, sizeof best_text, "best %.4f (trial %lld)", best->trial.value,
                      static_cast<long long>(best->trial.number));
      const std::string again =
          t->retry_of >= 0 ? cat("  (trial ", t->retry_of, " again: it was interrupted)") : "";
      std::printf("trial %-3lld %s  %s  (%s)  %s%s\n", static_cast<long long>(t->number),
                  space.format(t->values).c_str(), result.c_str(), clock_time(s).c_str(),
                  best_text, again.c_str());
      std::fflush(stdout);
    }
    if (copies.is_copy()) return train::stop_requested() ? kExitInterrupted : 0;
    MASE_CHECK(copies.wait() == 0 || train::stop_requested(), Error,
               "[search] a worker process failed (its error is above)");
    if (workers > 1)  // where the workers' time went: trials, their start, the wait at the end
      std::printf("workers   %s\n",
                  describe_run(std::span<const Study>(&study, 1), copies).c_str());
    const std::string csv = (fs::path(dir) / (study_name + ".csv")).string();
    study.write_csv(csv);
    auto best = study.best();
    if (best)
      std::printf("best      trial %lld: %s  accuracy %.4f\n",
                  static_cast<long long>(best->trial.number),
                  space.format(best->trial.values).c_str(), best->trial.value);
    std::printf("results   %s, %s, runs in %s\n", study.where().c_str(), csv.c_str(),
                (fs::path(dir) / study_name).c_str());
    if (pruner) {  // each trial's accuracy during training, pruned ones marked
      const std::string curves = (fs::path(dir) / (study_name + "-curves.svg")).string();
      try {
        plot_intermediate(study.trials(), cat(study_name, ": test accuracy during training (",
                                              sampler, ", ", prune.pruner, " pruner)"),
                         curves);
        std::printf("curves    %s\n", curves.c_str());
      } catch (const Error& e) {  // the search is done and saved: a missing gnuplot says so
        std::printf("warning   no figure of the curves: %s\n", e.what());
      }
    }
    return train::stop_requested() ? kExitInterrupted : 0;
  });
}
