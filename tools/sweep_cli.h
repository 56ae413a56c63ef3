// tools/sweep_cli.h — mase-search's Lab 1 subcommands: `sweep-width` (Lab 1.1) and
// `sweep-sparsity` (Lab 1.2). Only flags and checks here; the sweeps are search/width_sweep.h
// and search/sparsity_sweep.h. Included by tools/mase_search.cpp (one executable for every
// study: the Lab 1 sweeps share Lab 2's studies database, --dir and --plot conventions).
//
// Every list is checked before anything is loaded or written; a bad one is one line naming the
// flag, exit status 2 (tools/cli.h), and the studies database untouched.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "models/safetensors.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "search/curve_plot.h"
#include "search/sparsity_sweep.h"
#include "search/sweep_list.h"
#include "search/sweep_model.h"
#include "search/width_sweep.h"
#include "tools/cli.h"
#include "train/trainer.h"

namespace mase::cli {

constexpr const char* kWidthFooter = R"(Examples:
  mase-search sweep-width --model-dir RUN --data-dir ../shared/data
      Lab 1.1: widths 4..32, frac width 4, PTQ (evaluate RUN quantized) and QAT (100 more
      steps quantized) on 1,000 test reviews; writes runs/search/lab1-width.{csv,svg,png}
  mase-search sweep-width --model-dir RUN --widths 4..16:2,24,32 --frac-width half --curves ptq
      only the PTQ curve, Q(w/2).(w/2); any list: 4,8,16 or 4..32:4 or a mix
  Run the same command again to continue a stopped sweep: done points are skipped.
Exit status: 0 done, 1 error, 2 bad flags (nothing written), 130 stopped (run it again).)";

constexpr const char* kSparsityFooter = R"(Examples:
  mase-search sweep-sparsity --model-dir RUN --data-dir ../shared/data
      Lab 1.2: sparsity 0.1..0.9 x {random, l1-norm}, weights and activations, local scope,
      evaluated at once; writes runs/search/lab1-sparsity.{csv,svg,png}
  mase-search sweep-sparsity --model-dir RUN --targets weight --scopes local,global --finetune-steps 50
      weights only, both scopes, each point also fine-tuned 50 steps with the masks fixed
Exit status: 0 done, 1 error, 2 bad flags (nothing written), 130 stopped (run it again).)";

// The flags both sweeps share, bound to one TrainConfig.
struct SweepFlags {
  train::TrainConfig base;
  std::string dir = "runs/search", study, plots;
  double lr = 0;
  CLI::App* app = nullptr;

  void add(CLI::App* sub, const std::string& default_study) {
    app = sub;
    study = default_study;
    base.test_subset = 1000;
    base.train_subset = 2000;
    base.max_len = 0;
    base.ckpt_every = 0;
    sub->add_option("--model-dir", base.init, "the trained run folder (mase-train --out)")
        ->required();
    sub->add_option("--dir", dir, "folder of studies.db, the CSV, the plots and the runs")
        ->capture_default_str()
        ->check(cli::folder_to_write("a folder"));
    sub->add_option("--study", study, "study name (its CSV and plots are named after it)")
        ->capture_default_str()
        ->check(cli::file_name_check());
    sub->add_option("--plot", plots, "figures to draw, comma-separated: .svg or .png "
                                     "(default <dir>/<study>.svg,<dir>/<study>.png)")
        ->check(cli::nonempty("files .svg or .png"));
    sub->add_option("--data-dir", base.data_dir, "folder with imdb/ in it (as mase-train)")
        ->check(cli::nonempty("a folder"));
    sub->add_option("--cache-dir", base.cache_dir, "token caches (as mase-train)")
        ->check(cli::nonempty("a folder"));
    sub->add_option("--test-subset", base.test_subset, "test reviews per point (0 = all)")
        ->capture_default_str();
    sub->add_option("--max-len", base.max_len, "tokens per review (0 = what RUN was trained with)")
        ->capture_default_str();
    sub->add_option("--train-subset", base.train_subset, "reviews to train on (QAT, fine-tuning)")
        ->capture_default_str();
    sub->add_option("--batch-size", base.batch_size, "reviews per training step")
        ->capture_default_str();
    sub->add_option("--lr", lr, "peak learning rate of QAT / fine-tuning (default: mase-train's "
                                "recipe for a trained model, as --model-dir is)");
    sub->add_option("--seed", base.seed, "training seed (and random masks' seed)")
        ->capture_default_str()
        ->check(cli::seed_check());
    sub->add_option("--threads", base.threads, "threads (0 = all cores)")->capture_default_str();
    sub->add_option("--device", base.device, "where the points train and test: cpu or cuda[:N]")
        ->capture_default_str();
  }

  // Checks what both sweeps need; resolves max_len from the run. ConfigError naming the flag.
  void resolve() {
    if (app->count("--lr")) base.lr = lr;
    MASE_CHECK(std::filesystem::is_regular_file(std::filesystem::path(base.init) /
                                                "model.safetensors"),
               ConfigError, "[--model-dir] expected a run folder with model.safetensors, got '",
               base.init, "' (train one with mase-train --out RUN)");
    // its header read now (truncated? another file?), before a study file is written
    nn::read_safetensors_header((std::filesystem::path(base.init) / "model.safetensors").string());
    MASE_CHECK(!study.empty(), ConfigError, "[--study] expected a name, got an empty one");
    MASE_CHECK(base.test_subset >= 0, ConfigError, "[--test-subset] expected >= 0, got ",
               base.test_subset);
    MASE_CHECK(base.max_len >= 0, ConfigError, "[--max-len] expected >= 0, got ", base.max_len);
    if (base.max_len == 0) base.max_len = search::trained_max_len(base.init);
    base.log_every = 25;
    base.validate();
    require_device(Device::parse(base.device));  // a missing GPU: one line, before any point
  }

  // --plot's files; each must end in .svg or .png.
  std::vector<std::string> plot_list() const {
    std::vector<std::string> out;
    std::stringstream in(plots);
    for (std::string p; std::getline(in, p, ',');) {
      search::check_plot_path(p, "--plot");
      out.push_back(p);
    }
    return out;
  }
};

// Both subcommands, registered on mase-search's app.
struct SweepCommands {
  CLI::App *width = nullptr, *sparsity = nullptr;
  SweepFlags wf, sf;
  std::string widths = "4..32", frac = "4", curves = "ptq,qat";
  int64_t qat_steps = 100;
  std::string sparsities = "0.1..0.9:0.1", methods = "random,l1-norm", scopes = "local",
              targets = "both";
  int64_t finetune_steps = 0;

  explicit SweepCommands(CLI::App& app) {
    width = app.add_subcommand("sweep-width", "Lab 1.1: accuracy against fixed-point width, "
                                              "PTQ and QAT curves");
    width->footer(kWidthFooter);
    wf.add(width, "lab1-width");
    width->add_option("--widths", widths, "widths: 4..32, 4,8,16, 4..32:4")->capture_default_str();
    width->add_option("--frac-width", frac, "frac width at every width, or 'half' (width/2)")
        ->capture_default_str();
    width->add_option("--curves", curves, "ptq, qat or both")->capture_default_str();
    width->add_option("--qat-steps", qat_steps, "training steps of each QAT point")
        ->capture_default_str();

    sparsity = app.add_subcommand("sweep-sparsity", "Lab 1.2: accuracy against sparsity, one "
                                                    "curve per pruning method");
    sparsity->footer(kSparsityFooter);
    sf.add(sparsity, "lab1-sparsity");
    sparsity->add_option("--sparsities", sparsities, "sparsities in [0, 1]: 0.1..0.9:0.1, 0.5,0.9")
        ->capture_default_str();
    sparsity->add_option("--methods", methods, "random, l1-norm")->capture_default_str();
    sparsity->add_option("--scopes", scopes, "local, global")->capture_default_str();
    sparsity->add_option("--targets", targets, "weight, activation, both (weights and "
                                               "activations together)")->capture_default_str();
    sparsity->add_option("--finetune-steps", finetune_steps,
                         "> 0: also fine-tune each point this many steps (masks fixed)")
        ->capture_default_str();
  }

  bool chosen() const { return width->parsed() || sparsity->parsed(); }

  // Runs the chosen sweep; the exit status.
  int run() {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines reach a log file as they happen
    int evaluated = width->parsed() ? run_width() : run_sparsity();
    (void)evaluated;
    return train::stop_requested() ? 130 : 0;
  }

 private:
  // The shared flags into the options (checked), then threads and Ctrl-C handling.
  template <class Options>
  static void start(Options& o, SweepFlags& f) {
    o.plots = f.plot_list();
    f.resolve();
    o.base = f.base;
    o.dir = f.dir;
    o.study = f.study;
    set_num_threads(o.base.threads);
    train::clear_stop();
    train::install_stop_handlers();
  }

  int run_width() {
    search::WidthSweepOptions o;
    o.widths = search::parse_int_list(widths, "--widths");
    o.frac = search::parse_frac_rule(frac, "--frac-width");
    search::check_widths(o.widths, o.frac, "--widths", "--frac-width");
    o.curves = search::parse_name_list(curves, "--curves", {"ptq", "qat"});
    MASE_CHECK(qat_steps >= 1, ConfigError, "[--qat-steps] expected >= 1, got ", qat_steps);
    o.qat_steps = qat_steps;
    start(o, wf);
    return search::run_width_sweep(o, stdout);
  }

  int run_sparsity() {
    search::SparsitySweepOptions o;
    o.sparsities = search::parse_real_list(sparsities, "--sparsities");
    search::check_sparsities(o.sparsities, "--sparsities");
    o.methods = search::parse_name_list(methods, "--methods", search::prune_methods());
    o.scopes = search::parse_name_list(scopes, "--scopes", search::prune_scopes());
    o.targets = search::parse_name_list(targets, "--targets", search::prune_targets());
    MASE_CHECK(finetune_steps >= 0, ConfigError, "[--finetune-steps] expected >= 0, got ",
               finetune_steps);
    o.finetune_steps = finetune_steps;
    start(o, sf);
    return search::run_sparsity_sweep(o, stdout);
  }
};

}  // namespace mase::cli
