// search/lab_commands.h — one call per lab question, each what one `mase-search <command>`
// does: check everything, load the data once, run its studies, write the CSVs and the figure.
//
//   run_tutorial        Lab 2.1  `mase-search tutorial`: the tutorial's whole space (4
//                       architecture choices + Linear-or-Identity), one study per sampler
//                       (<study>-random, -grid, -tpe), their best-so-far curves on one figure
//   run_compress_aware  Lab 2.2  `mase-search compress-aware`: three studies over the same
//                       space — trained only (<study>-plain), trained then compressed
//                       (-compressed), compressed then trained again (-post-trained)
//                       (both: with params_objective two objectives, accuracy and parameters,
//                       each study's front printed and a Pareto figure, <plot>-pareto)
//   run_precision       Lab 3    `mase-search precision`: per-layer formats on a trained model
//                       (--init), one study per format (<study>-<format>), and with `mixed` one
//                       where each layer picks among them (<study>-mixed); best-so-far figure
//                       and the Pareto figure (accuracy against average weight bits); with
//                       bits_objective the studies have two objectives (TPE by default)
//   run_custom          beyond the course `mase-search custom`: the samplers on any command,
//                       of one objective or several (--directions; TPE by default, front printed)
// With `workers` > 1 the command forks workers − 1 copies of itself once its studies are open
// (search/workers.h); every process loads the data and claims trials of each study in turn.
// Files: <dir>/studies.db (or --storage), <dir>/<study>.csv per study, <dir>/<study>/trial-NNNN
// (runs), the figure at --plot (default <dir>/<prefix>.svg; precision and the two-objective
// searches add <plot>-pareto, precision <dir>/<prefix>-summary.csv). ConfigErrors before
// anything is written.
// Read next: search/lab_objectives.h, search/lab_runner.h, tools/mase_search_labs.cpp.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/lab_spaces.h"
#include "search/pruner.h"
#include "search/sampler.h"
#include "train/train_config.h"

namespace mase::search {

struct LabOptions {
  std::string dir = "runs/search";
  std::string storage;  // the studies: "" = <dir>/studies.db, or sqlite:///FILE, postgresql://...
  std::string study;   // prefix of the study names ("" = the command's name)
  int trials = 8;      // finished trials per study
  bool resume = false;
  uint64_t seed = 0;
  std::string plot;    // the figure (.svg or .png); "" = <dir>/<prefix>.svg
  int workers = 1;     // processes running trials at once (search/workers.h; CPU only)
  train::TrainConfig base;  // recipe and budget of every trial
  std::FILE* out = stdout;
};

// The architecture choices of Labs 2.1 and 2.2 (the tutorial's by default).
struct ArchChoices {
  std::vector<int64_t> layers = {2, 4, 8}, heads = {2, 4, 8, 16};
  std::vector<int64_t> hidden = {128, 192, 256, 384, 512};
  std::vector<int64_t> intermediate = {512, 768, 1024, 1536, 2048};
};

struct TutorialOptions : LabOptions {
  ArchChoices arch;
  std::vector<std::string> samplers = {"random", "grid", "tpe"};
  LinearChoice linear = LinearChoice::shared;
  PruneOptions prune;
  // Two objectives (--objectives accuracy,params): test accuracy up, the trained model's
  // trainable parameters (attribute `parameters`) down, as Optuna's directions = [maximize,
  // minimize]; the CLI's default samplers are then random,tpe,nsga2 (Optuna's default TPE,
  // NSGA-II, and random as their baseline). No pruner
  // (it judges one value). Each study's front is printed with its hypervolume from accuracy
  // 0.5 and the space's largest model, and <plot>-pareto draws accuracy against parameters.
  bool params_objective = false;
  int64_t population = 8;  // nsga2's generation size (Optuna's default of 50: too many here)
  // A parameter budget (--max-params N, 0: none): each trial gets the constraint "params" =
  // its trainable parameters − N (Optuna's trial.set_constraint; feasible when <= 0), so the
  // best trial is the best within the budget and TPE and NSGA-II rank the trials over it last.
  int64_t max_params = 0;
};

struct CompressAwareOptions : LabOptions {
  ArchChoices arch;
  std::string sampler = "tpe";
  LinearChoice linear = LinearChoice::shared;
  nlohmann::json compress;  // {"quantize": ..., "prune": ...}; required
  int64_t post_steps = 50;  // training steps after compressing (the post-trained study)
  std::vector<std::string> variants = {"plain", "compressed", "post-trained"};
  PruneOptions prune;
  // As TutorialOptions' (the sampler stays --sampler's, tpe by default). The parameters are the
  // architecture's before compression, the same measure for the three studies: a pruned
  // model keeps its zeros as parameters (the trial's weight_sparsity says how many).
  bool params_objective = false;
  int64_t population = 8;
};

struct PrecisionOptions : LabOptions {
  std::string sampler = "tpe";
  std::string init;  // a trained run folder (or HF folder)
  std::vector<std::string> formats = {"integer"};  // or {"all"}
  std::vector<int64_t> widths = {8, 16, 32}, frac_widths = {2, 4, 8};
  bool mixed = false;     // add the study where each layer picks among the formats
  bool per_format = true; // one study per format
  int64_t qat_steps = 0;  // > 0: fine-tune this many steps quantized after PTQ
  double bits_weight = 0; // > 0: value = accuracy − bits_weight · avg_weight_bits / 32
  // Two objectives, accuracy up and average weight bits down (Optuna's directions =
  // [maximize, minimize]), searched by `sampler` (tpe, Optuna's default: search/tpe.h; or
  // nsga2, search/nsga2.h, in generations of `population`; random; grid).
  bool bits_objective = false;
  int64_t population = 8;  // NSGA-II's generation size (Optuna's default is 50: too many here)
  // --pruner wilcoxon (alone, or wrapped by --prune-patience): each trial's test batches are
  // its reports, judged against the best trial's on the same batches (search/wilcoxon.h);
  // with qat_steps, a curve pruner instead: PTQ at step 0, a test every base.eval_every QAT
  // steps (search/lab_objectives.h)
  PruneOptions prune;
};

// `mase-search custom`: any experiment, through a command template (search/command_objective.h).
struct CustomOptions : LabOptions {
  std::string sampler = "tpe";
  std::string space;    // "x=real:0:1,n=int:1:8,act=cat:relu|gelu"
  std::string command;  // "python3 f.py {x} {n} {act}": the last stdout line is the value
  bool minimize = false;
  // Several objectives (--directions maximize,minimize): the last line holds one number each;
  // a study of that many objectives (any sampler: tpe by default), its Pareto front printed at
  // the end. Exclusive with `minimize`. `metric_names`: one per objective (Optuna's
  // set_metric_names), or none.
  std::vector<Direction> directions;
  std::vector<std::string> metric_names;
  int64_t population = 8;  // NSGA-II's generation size, as precision's
  // Pruning: the command prints "mase:report STEP VALUE" lines (search/command_objective.h);
  // halving and hyperband keep Optuna's default min_resource (the steps are the command's).
  PruneOptions prune;
};

struct LabResult {
  std::vector<std::string> studies, csvs;
  std::vector<std::string> plots;
  // This process is one of the --workers copies: it ran trials and wrote nothing else (the
  // process that started them writes the CSVs and figures once all are done). Its caller
  // exits: the rest of the program belongs to the parent.
  bool worker_copy = false;
};

LabResult run_tutorial(TutorialOptions o);
LabResult run_compress_aware(CompressAwareOptions o);
LabResult run_precision(PrecisionOptions o);
LabResult run_custom(CustomOptions o);

}  // namespace mase::search
