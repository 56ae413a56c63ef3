// tools/mase_search_labs.cpp — the flags of `mase-search tutorial | compress-aware | precision
// | custom`. One command per lab question, named after what it searches (the lab numbers are in
// --help and docs/lab2.md, docs/lab3.md). Each writes its studies to <dir>/studies.db (or
// --storage), a CSV per study and one figure (--plot, .svg or .png; precision, and tutorial and
// compress-aware with --objectives accuracy,params, also a Pareto figure). Exit status: 0 done, 1 error, 2 bad flags,
// 130 stopped by Ctrl-C (continue with the same command and --resume).
// Read next: search/lab_commands.h.
#include "tools/mase_search_labs.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstring>

#include "quant/passes.h"
#include "runtime/error.h"
#include "search/command_objective.h"
#include "search/lab_commands.h"
#include "search/text.h"
#include "tools/cli.h"
#include "train/trainer.h"

namespace mase::tools {
using namespace mase::search;

namespace {

constexpr int kExitInterrupted = 130;

const char* kTutorialHelp = R"(Lab 2.1 (tutorial 5): the tutorial's whole space, random / grid / TPE on one plot.
Examples:
  mase-search tutorial --trials 8 --max-len 128 --test-subset 500 --data-dir ../shared/data
      studies tutorial-random, tutorial-grid, tutorial-tpe: num_layers x num_heads x
      hidden_size x intermediate_size x (square Linears kept or Identity, one shared choice)
  mase-search tutorial --linear-choice per-layer --samplers tpe --study tut-pl --plot pl.png
      each square Linear chooses for itself (the tutorial's f"{name}_type")
  mase-search tutorial --trials 16 --resume     (the same flags: continue to 16 trials each)
  mase-search tutorial --trials 8 --workers 2 --threads 1
      two processes claim the trials of each study in turn, one thread each
  mase-search tutorial --trials 20 --max-steps 200 --eval-every 50 --pruner median
      a trial whose accuracy at step 50, 100 or 150 is below the median of the completed
      trials' there stops (pruned); the first 5 complete trials are never judged
  mase-search tutorial --trials 20 --max-steps 200 --eval-every 50 --pruner halving
      successive halving: at step 50 (the next rung, 200, is the end) a trial goes on only if
      its accuracy is in the top quarter of all trials' there (--prune-reduction 4);
      --pruner hyperband runs brackets of it that wait longer
  mase-search tutorial --trials 20 --max-steps 400 --eval-every 50 --pruner threshold \
      --prune-lower 0.55 --prune-warmup 100
      a trial still at chance (accuracy below 0.55) from step 100 on stops
  mase-search tutorial --trials 20 --max-steps 400 --eval-every 50 --pruner patient \
      --prune-patience 2
      early stopping: a trial whose last 3 evaluations never beat its best before them
      stops; with --pruner median --prune-patience 2 the median pruner decides, but only
      once patience has run out (Optuna's PatientPruner wrapping it)
  mase-search tutorial --trials 16 --max-params 3000000
      a parameter budget: each trial gets Optuna's constraint params - 3000000 (feasible when
      <= 0); the best trial is the best within it, TPE and NSGA-II rank the others last
  mase-search tutorial --num-layers 2 --hidden-sizes 128,192,256 --intermediate-sizes 512,768,1024
      a smaller space for a CPU budget (the defaults are the tutorial's)
  mase-search tutorial --objectives accuracy,params --trials 16 --population 4 --plot arch.png
      two objectives, test accuracy up and trainable parameters down: studies
      tutorial-random, tutorial-tpe and tutorial-nsga2 (the default --samplers then:
      Optuna's default TPE, NSGA-II, and random as the baseline); each study's Pareto front
      is printed with its hypervolume from accuracy 0.5 and the space's largest model,
      arch-pareto.png draws accuracy against parameters; no --pruner)";

const char* kCompressHelp = R"(Lab 2.2: compression-aware search; three studies, three curves on one plot.
Examples:
  mase-search compress-aware --compress int8-prune50.json --post-steps 50 --trials 8 \
      --max-len 128 --data-dir ../shared/data
      compress-aware-plain         train, test
      compress-aware-compressed    train, quantize + prune (the file's pipeline), test
      compress-aware-post-trained  train, compress, train 50 steps more, test
  int8-prune50.json: {"quantize": {"by": "type", "default": {"config": {"name": "integer",
      "data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4,
      "bias_width": 8, "bias_frac_width": 4}}}, "prune": {"weight": {"sparsity": 0.5}}}
  mase-search compress-aware --compress int8-prune50.json --objectives accuracy,params \
      --trials 16 --data-dir ../shared/data
      two objectives, the variant's test accuracy up and the architecture's trainable
      parameters down (counted before compression, pruned zeros included: the same measure
      for the three studies), searched by TPE (as Optuna 5.0's default; --sampler nsga2 for
      NSGA-II); each study's front printed, compress-aware-pareto.svg; no --pruner)";

const char* kPrecisionHelp = R"(Lab 3: per-layer precision of a trained model (PTQ; QAT with --qat-steps).
Examples:
  mase-search precision --init runs/tiny --formats integer --trials 20
      Lab 3.1: each Linear: full precision or integer, width {8,16,32}, frac {2,4,8}
  mase-search precision --init runs/tiny --formats integer --widths 4,6,8 --frac-widths 2,3
  mase-search precision --init runs/tiny --formats all --mixed --trials 10 --plot lab3.png
      Lab 3.2: one study per format over its own parameters, plus one where each layer
      picks its format; lab3.png (best so far) and lab3-pareto.png (accuracy vs bits)
  mase-search precision --init runs/tiny --formats integer --qat-steps 20
      each trial fine-tunes 20 steps quantized after PTQ (the trial's value is then QAT's)
  mase-search precision --init runs/tiny --formats all --mixed-only --bits-weight 0.1
      accuracy up and bits down: each 32 bits per weight cost 0.1 of accuracy; the
      Pareto figure shows which trials no other beats on both
  mase-search precision --init runs/tiny --formats integer --objectives accuracy,bits --trials 40
      accuracy and bits as two objectives: TPE (Optuna's default) searches for the Pareto
      front itself; each study's front is printed at the end with its hypervolume
  mase-search precision --init runs/tiny --objectives accuracy,bits --sampler nsga2 --population 8
      the same with NSGA-II, in generations of 8 trials (it needs a few: docs/lab3.md)
  mase-search precision --init runs/tiny --formats integer --trials 40 --pruner wilcoxon
      each trial's test batches are reported as it is tested (in an order shuffled per
      trial); one significantly worse than the best trial's on the same batches stops
      there (Optuna's WilcoxonPruner; --prune-p 0.1, --prune-startup-steps 2)
  mase-search precision --init runs/tiny --formats integer --widths 2,4,8 --qat-steps 60 \
      --eval-every 20 --pruner median
      QAT trials pruned on their curves: PTQ's accuracy at step 0, a test every 20 QAT steps;
      one below the completed trials' median there stops (--prune-warmup 1: never at PTQ);
      any curve pruner (percentile, halving, hyperband, threshold, patient); curves figure
Formats: integer minifloat_ieee minifloat_denorm log binary binary_scaling binary_residual
  ternary block_fp block_minifloat block_log mxint8 mxfp8_e4m3 mxfp8_e5m2 mxfp6_e3m2
  mxfp6_e2m3 mxfp4_e2m1 (or all))";

const char* kCustomHelp = R"HELP(Beyond the course: the samplers on any experiment. The last line the command prints on
stdout is the trial's value; {name} is replaced by the parameter's value (shell-quoted), {trial}
by the trial number.
Examples:
  mase-search custom --space 'x=real:-2:2,y=real:-2:2' --trials 30 \
      --command 'python3 -c "print(-({x}-0.5)**2 - ({y}+1)**2)"'
  mase-search custom --minimize --space 'lr=real:1e-5:1e-2:log,layers=int:1:8,act=cat:relu|gelu' \
      --command './my_experiment.sh --lr {lr} --layers {layers} --act {act}' --study mine
  mase-search custom --directions minimize,minimize --metric-names f1,f2 --space 'x=real:-1:3' \
      --command 'python3 -c "x={x}; print(x*x, (x-2)**2)"' --trials 24
      two objectives: the last line holds one number each (spaces or commas between them);
      TPE (Optuna's default) searches for the Pareto front, printed at the end; add
      --sampler nsga2 --population 6 for NSGA-II in generations of 6
  mase-search custom --space 'lr=real:1e-4:1e-1:log' --pruner median --trials 20 \
      --command 'python3 train.py --lr {lr}'
      pruning: train.py prints "mase:report EPOCH ACCURACY" after each epoch (Optuna's
      trial.report); a trial below the median of the completed ones there is sent SIGTERM and
      recorded pruned; --pruner halving / hyperband judge rungs instead; --pruner wilcoxon
      suits a command that prints "mase:report INSTANCE VALUE" for each benchmark instance
  a line "mase:constraint NAME VALUE" (feasible when VALUE <= 0; Optuna's set_constraint)
      makes the trial infeasible when VALUE > 0: never the best, ranked last by TPE and NSGA-II)HELP";

std::vector<int64_t> int_list(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  for (const std::string& item : split_items(s, ',', flag, "an integer")) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MASE_CHECK(used == item.size(), ConfigError, "[search] expected integers for ", flag,
               ", got '", item, "'");
    out.push_back(v);
  }
  return out;
}

// The flags every lab command has; `lr` and `lists` are read back after parsing.
struct Common {
  double lr = 0;
};

void add_common(CLI::App* c, LabOptions& o, Common& k) {
  c->add_option("--trials", o.trials, "finished trials per study")->capture_default_str();
  c->add_option("--study", o.study, "prefix of the study names (default: the command)")
      ->check(cli::file_name_check());
  c->add_option("--dir", o.dir, "folder of studies.db, the CSVs and the trial runs")
      ->capture_default_str()
      ->check(cli::folder_to_write("a folder"));
  c->add_option("--storage", o.storage, "the studies: sqlite:///FILE or "
                "postgresql://USER:PASSWORD@HOST:PORT/DB (default <dir>/studies.db)")
      ->check(cli::nonempty("a storage sqlite:///FILE or postgresql://..."));
  c->add_option("--seed", o.seed, "seed of the samplers and of the trials")
      ->capture_default_str()
      ->check(cli::seed_check());
  c->add_flag("--resume", o.resume, "continue the studies (same flags)");
  c->add_option("--workers", o.workers,
                "processes running trials at once (--threads 0: cores / N each)")
      ->capture_default_str();
  c->add_option("--plot", o.plot, "the figure, .svg or .png (default <dir>/<study>.svg)")
      ->check(cli::nonempty("a file .svg or .png"));
  c->add_option("--model", o.base.model, "preset giving everything the space does not vary")
      ->capture_default_str();
  c->add_option("--max-steps", o.base.max_steps, "training steps per trial")->capture_default_str();
  c->add_option("--train-subset", o.base.train_subset, "training reviews (0 = all)")
      ->capture_default_str();
  c->add_option("--test-subset", o.base.test_subset, "test reviews (0 = all)")
      ->capture_default_str();
  c->add_option("--batch-size", o.base.batch_size, "reviews per step")->capture_default_str();
  c->add_option("--max-len", o.base.max_len, "tokens per review")->capture_default_str();
  c->add_option("--lr", k.lr, "peak learning rate (default: the recipe's)");
  c->add_option("--data-dir", o.base.data_dir, "folder with imdb/ in it (as mase-train)")
      ->check(cli::nonempty("a folder"));
  c->add_option("--cache-dir", o.base.cache_dir, "tokenizer models and token caches")
      ->check(cli::nonempty("a folder"));
  c->add_option("--vocab", o.base.vocab, "tokenizer file for the trials' data: a vocab.txt "
                "(WordPiece) or a sentencepiece .model (default: a sentencepiece model trained "
                "on IMDb's training reviews and cached; precision: --init's)")
      ->check(cli::existing_file("a tokenizer file (vocab.txt or .model)"));
  c->add_option("--threads", o.base.threads, "threads (0 = all cores)")->capture_default_str();
  c->add_option("--device", o.base.device, "where the trials train: cpu or cuda[:N]")
      ->capture_default_str();
}

void defaults(LabOptions& o) {
  o.base.model = "bert-tiny";
  o.base.max_steps = 100;
  o.base.train_subset = 2000;
  o.base.test_subset = 500;
  o.base.ckpt_every = 0;
  o.base.log_every = 50;
}

LinearChoice parse_linear(const std::string& s) { return linear_choice_from(s); }

// --num-layers 2,4 --num-heads ... as text, read back into an ArchChoices after parsing.
struct ArchFlags {
  std::string layers = "2,4,8", heads = "2,4,8,16", hidden = "128,192,256,384,512",
              intermediate = "512,768,1024,1536,2048";
  void add(CLI::App* c) {
    c->add_option("--num-layers", layers, "num_layers choices")->capture_default_str();
    c->add_option("--num-heads", heads, "num_heads choices")->capture_default_str();
    c->add_option("--hidden-sizes", hidden, "hidden_size choices")->capture_default_str();
    c->add_option("--intermediate-sizes", intermediate, "intermediate_size choices")
        ->capture_default_str();
  }
  ArchChoices read() const {
    return {int_list(layers, "--num-layers"), int_list(heads, "--num-heads"),
            int_list(hidden, "--hidden-sizes"), int_list(intermediate, "--intermediate-sizes")};
  }
};

}  // namespace

// --pruner and its settings (search/pruner.h, search/halving.h, search/curve_pruners.h,
// search/wilcoxon.h).
void add_prune_flags(CLI::App* c, PruneOptions& p) {
  c->add_option("--pruner", p.pruner, "none; median: stop a trial whose value at a report is "
                "below the completed trials' median there; percentile: the same below their "
                "--prune-percentile P-th best; halving: keep the best 1/eta of the "
                "trials at each rung (steps m, m*eta, m*eta^2, ...); hyperband: several halving "
                "brackets side by side; threshold: stop at a value outside [--prune-lower, "
                "--prune-upper] or NaN; wilcoxon: stop a trial whose per-step values are "
                "significantly worse than the best trial's on the same steps (for objectives "
                "that average instances); patient: stop a curve that stopped improving "
                "(--prune-patience) (Optuna's pruners)")
      ->capture_default_str();
  c->add_option("--prune-startup", p.startup_trials,
                "median, percentile: completed trials before any is pruned")->capture_default_str();
  c->add_option("--prune-warmup", p.warmup_steps,
                "median, percentile, threshold: steps of a trial before it can be pruned")
      ->capture_default_str();
  c->add_option_function<double>("--prune-percentile", [&p](double v) { p.percentile = v; },
                                 "percentile: a trial goes on while its best value is in the top "
                                 "P% of the completed trials' at the same step (50: median)");
  c->add_option("--prune-min-resource", p.min_resource,
                "halving, hyperband: steps to the first rung m (default: --eval-every when "
                "trials train; custom: Optuna's, halving 0 = auto (the longest complete "
                "trial's steps / 100), hyperband 1)");
  c->add_option("--prune-reduction", p.reduction_factor,
                "halving, hyperband: eta, about 1 trial in eta passes each rung (default: "
                "Optuna's, 4 for halving, 3 for hyperband)");
  c->add_option_function<double>("--prune-lower", [&p](double v) { p.lower = v; },
                                 "threshold: prune a value below this");
  c->add_option_function<double>("--prune-upper", [&p](double v) { p.upper = v; },
                                 "threshold: prune a value above this");
  c->add_option("--prune-p", p.p_threshold,
                "wilcoxon: prune when the signed-rank test's p-value is below this")
      ->capture_default_str();
  c->add_option("--prune-startup-steps", p.startup_steps,
                "wilcoxon: steps in common with the best trial before it judges")
      ->capture_default_str();
  c->add_option("--prune-patience", p.patience,
                "reports without improvement before --pruner patient prunes; with another "
                "--pruner, that one decides only then (Optuna's PatientPruner wrapping it)");
  c->add_option("--prune-min-delta", p.min_delta,
                "with --prune-patience: the improvement that counts")->capture_default_str();
}

// --pruner ... --eval-every N: trials that train are tested every N steps and judged.
void add_pruner(CLI::App* c, PruneOptions& p, train::TrainConfig& base) {
  add_prune_flags(c, p);
  c->add_option("--eval-every", base.eval_every,
                "test every N training steps (what --pruner judges; 0 = at the end only)")
      ->capture_default_str();
}

namespace {

// --objectives accuracy,params --population N (tutorial, compress-aware).
void add_params_objective(CLI::App* c, std::string& objectives, int64_t& population) {
  c->add_option("--objectives", objectives,
                "accuracy, or accuracy,params: two objectives (test accuracy up, trainable "
                "parameters down), a Pareto front searched by each sampler")
      ->capture_default_str();
  c->add_option("--population", population,
                "nsga2: trials per generation (Optuna's default is 50; a few dozen trials "
                "want about 8)")
      ->capture_default_str();
}

bool params_objective(const std::string& objectives) {
  MASE_CHECK(objectives == "accuracy" || objectives == "accuracy,params", ConfigError,
             "[search] --objectives expected accuracy or accuracy,params, got '", objectives,
             "'");
  return objectives == "accuracy,params";
}

}  // namespace

bool is_lab_command(const char* arg) {
  return std::strcmp(arg, "tutorial") == 0 || std::strcmp(arg, "compress-aware") == 0 ||
         std::strcmp(arg, "precision") == 0 || std::strcmp(arg, "custom") == 0;
}

int lab_main(int argc, char** argv) {
  CLI::App app{"mase-search: one command per lab question (Labs 2.1, 2.2, 3.1, 3.2)"};
  app.require_subcommand(1);
  TutorialOptions tut;
  CompressAwareOptions cmp;
  PrecisionOptions pre;
  for (LabOptions* o : std::initializer_list<LabOptions*>{&tut, &cmp, &pre}) defaults(*o);
  pre.base.max_steps = 0;  // no training unless --qat-steps
  pre.base.max_len = 0;    // the trained run's
  Common ct, cc, cp;
  std::string samplers = "random,grid,tpe", linear_t = "shared", linear_c = "shared";
  std::string compress_file, variants = "plain,compressed,post-trained";
  std::string formats = "integer", widths = "8,16,32", fracs = "2,4,8", objectives = "accuracy";
  bool mixed_only = false;

  CLI::App* t = app.add_subcommand("tutorial", "Lab 2.1: the tutorial's whole space");
  t->footer(kTutorialHelp);
  add_common(t, tut, ct);
  t->add_option("--samplers", samplers, "comma-separated: random, grid, tpe, tpe-independent, "
                "tpe-multivariate, nsga2 (default random,grid,tpe; random,tpe,nsga2 with two --objectives)");
  ArchFlags arch_t, arch_c;
  arch_t.add(t);
  t->add_option("--linear-choice", linear_t, "square Linear or Identity: shared, per-layer, none")
      ->capture_default_str();
  add_pruner(t, tut.prune, tut.base);
  t->add_option("--max-params", tut.max_params, "a budget of trainable parameters: each trial's "
                "constraint params - N, feasible when <= 0 (Optuna's set_constraint; 0: none)")
      ->capture_default_str();
  std::string objectives_t = "accuracy", objectives_c = "accuracy";
  add_params_objective(t, objectives_t, tut.population);

  CLI::App* c = app.add_subcommand("compress-aware", "Lab 2.2: compression-aware search");
  c->footer(kCompressHelp);
  add_common(c, cmp, cc);
  c->add_option("--compress", compress_file, "pipeline config (TOML/JSON): quantize + prune")
      ->required()
      ->check(cli::existing_file("a compress config (TOML or JSON)"));
  c->add_option("--post-steps", cmp.post_steps, "training steps after compressing")
      ->capture_default_str();
  c->add_option("--sampler", cmp.sampler, "random, grid, tpe, tpe-independent, "
                "tpe-multivariate or nsga2 (default tpe)");
  c->add_option("--variants", variants, "studies to run: plain, compressed, post-trained")
      ->capture_default_str();
  c->add_option("--linear-choice", linear_c, "shared, per-layer, none")->capture_default_str();
  arch_c.add(c);
  add_pruner(c, cmp.prune, cmp.base);
  add_params_objective(c, objectives_c, cmp.population);

  CLI::App* p = app.add_subcommand("precision", "Lab 3: per-layer precision of a trained model");
  p->footer(kPrecisionHelp);
  add_common(p, pre, cp);
  p->add_option("--init", pre.init, "the trained run folder to quantize")->required();
  p->add_option("--formats", formats, "comma-separated format names, or all")
      ->capture_default_str();
  p->add_option("--widths", widths, "integer: width choices (2..32)")->capture_default_str();
  p->add_option("--frac-widths", fracs, "integer: frac width choices")->capture_default_str();
  p->add_flag("--mixed", pre.mixed, "also a study where each layer picks among the formats");
  p->add_flag("--mixed-only", mixed_only, "only that study");
  p->add_option("--qat-steps", pre.qat_steps, "quantized fine-tuning steps after PTQ")
      ->capture_default_str();
  p->add_option("--sampler", pre.sampler,
                "random, grid, tpe, tpe-independent, tpe-multivariate or nsga2 (default tpe)");
  p->add_option("--bits-weight", pre.bits_weight,
                "two objectives in one: value = accuracy - W * avg weight bits / 32")
      ->capture_default_str();
  p->add_option("--objectives", objectives,
                "accuracy, or accuracy,bits: two objectives (accuracy up, average weight bits "
                "down): a Pareto front, searched by --sampler (tpe: Optuna's default)")
      ->capture_default_str();
  p->add_option("--population", pre.population,
                "nsga2: trials per generation (Optuna's default is 50; a few dozen trials "
                "want about 8)")
      ->capture_default_str();
  add_prune_flags(p, pre.prune);  // wilcoxon: each test batch's accuracy is a report
  p->add_option("--eval-every", pre.base.eval_every,
                "with --qat-steps: test every N QAT steps (the curve a --pruner judges, PTQ at "
                "step 0; 0 = at the end only)")
      ->capture_default_str();

  CustomOptions cus;
  defaults(cus);
  CLI::App* u = app.add_subcommand("custom", "any experiment: a command template as the objective");
  u->footer(kCustomHelp);
  u->add_option("--space", cus.space, "name=real:LOW:HIGH[:log], name=int:..., name=cat:A|B, ...")
      ->required();
  u->add_option("--command", cus.command, "shell command; its last stdout line is the value")
      ->required();
  u->add_flag("--minimize", cus.minimize, "lower values are better");
  std::string directions, metric_names;
  u->add_option("--directions", directions,
                "several objectives: maximize or minimize for each, comma-separated (the last "
                "stdout line then holds one number each); exclusive with --minimize");
  u->add_option("--metric-names", metric_names, "a name for each objective, comma-separated");
  u->add_option("--sampler", cus.sampler, "random, grid, tpe, tpe-independent, tpe-multivariate "
                "or nsga2 (default tpe)");
  u->add_option("--population", cus.population,
                "nsga2: trials per generation (Optuna's default is 50)")
      ->capture_default_str();
  u->add_option("--trials", cus.trials, "finished trials")->capture_default_str();
  u->add_option("--study", cus.study, "study name (default custom)")
      ->check(cli::file_name_check());
  u->add_option("--dir", cus.dir, "folder of studies.db and the CSV")
      ->capture_default_str()
      ->check(cli::folder_to_write("a folder"));
  u->add_option("--storage", cus.storage, "the study: sqlite:///FILE or "
                "postgresql://USER:PASSWORD@HOST:PORT/DB (default <dir>/studies.db)")
      ->check(cli::nonempty("a storage sqlite:///FILE or postgresql://..."));
  u->add_option("--seed", cus.seed, "seed of the sampler")
      ->capture_default_str()
      ->check(cli::seed_check());
  u->add_flag("--resume", cus.resume, "continue the study (same flags)");
  u->add_option("--workers", cus.workers, "commands running at once")->capture_default_str();
  u->add_option("--plot", cus.plot, "the figure, .svg or .png (default <dir>/<study>.svg)")
      ->check(cli::nonempty("a file .svg or .png"));
  add_prune_flags(u, cus.prune);  // judging the command's "mase:report STEP VALUE" lines

  if (auto status = cli::parse(app, "mase-search", argc, argv)) return *status;

  return cli::run("mase-search", [&]() -> int {
    train::clear_stop();
    train::install_stop_handlers();
    for (LabOptions* o : {static_cast<LabOptions*>(&tut), static_cast<LabOptions*>(&cmp),
                          static_cast<LabOptions*>(&pre)})
      if (!o->base.vocab.empty()) o->base.tokenizer = train::tokenizer_kind(o->base.vocab);
    if (t->parsed()) {
      if (t->count("--lr")) tut.base.lr = ct.lr;
      tut.params_objective = params_objective(objectives_t);
      // Optuna's default TPE, NSGA-II (made for a Pareto front), and random as their baseline
      if (tut.params_objective && !t->count("--samplers")) samplers = "random,tpe,nsga2";
      tut.samplers = split_items(samplers, ',', "--samplers", "a sampler name");
      MASE_CHECK(t->count("--population") == 0 ||
                     std::count(tut.samplers.begin(), tut.samplers.end(), "nsga2") > 0,
                 ConfigError, "[search] --population is NSGA-II's: expected nsga2 among "
                 "--samplers (or --objectives accuracy,params), got --samplers ", samplers);
      tut.linear = parse_linear(linear_t);
      tut.arch = arch_t.read();
      run_tutorial(tut);
    } else if (c->parsed()) {
      if (c->count("--lr")) cmp.base.lr = cc.lr;
      cmp.linear = parse_linear(linear_c);
      cmp.arch = arch_c.read();
      cmp.variants = split_items(variants, ',', "--variants", "a variant");
      cmp.compress = quant::read_config_file(compress_file);
      cmp.params_objective = params_objective(objectives_c);
      MASE_CHECK(c->count("--population") == 0 || cmp.sampler == "nsga2", ConfigError,
                 "[search] --population is NSGA-II's: expected --sampler nsga2, got --sampler ",
                 cmp.sampler);
      run_compress_aware(cmp);
    } else if (u->parsed()) {
      if (u->count("--directions")) cus.directions = parse_directions(directions);
      if (u->count("--metric-names")) {
        cus.metric_names = split_items(metric_names, ',', "--metric-names", "a name");
        MASE_CHECK(!cus.metric_names.empty(), ConfigError, "[--metric-names] expected a name "
                   "for each objective, comma-separated, got none");
      }
      MASE_CHECK(u->count("--population") == 0 || cus.sampler == "nsga2", ConfigError,
                 "[search] --population is NSGA-II's: expected --sampler nsga2, got --sampler ",
                 cus.sampler);
      run_custom(cus);
    } else {
      if (p->count("--lr")) pre.base.lr = cp.lr;
      pre.formats = split_items(formats, ',', "--formats", "a format name");
      pre.widths = int_list(widths, "--widths");
      pre.frac_widths = int_list(fracs, "--frac-widths");
      if (mixed_only) pre.mixed = true, pre.per_format = false;
      MASE_CHECK(objectives == "accuracy" || objectives == "accuracy,bits", ConfigError,
                 "[search] --objectives expected accuracy or accuracy,bits, got '", objectives,
                 "'");
      pre.bits_objective = objectives == "accuracy,bits";
      MASE_CHECK(p->count("--population") == 0 || pre.sampler == "nsga2", ConfigError,
                 "[search] --population is NSGA-II's: expected --sampler nsga2, got --sampler ",
                 pre.sampler);
      run_precision(pre);
    }
    // a --workers copy ends here too (LabResult::worker_copy); the parent has written the files
    return train::stop_requested() ? kExitInterrupted : 0;
  });
}

}  // namespace mase::tools
