// search/lab_precision.cpp — `mase-search precision` (Labs 3.1 and 3.2): a trained model's
// Linears each given a number format by the sampler, evaluated after PTQ (and --qat-steps of
// QAT), one study per format family and one where each layer picks (--mixed); the steps every
// lab command takes are lab_steps.h's. Read lab_commands.h (PrecisionOptions) first.
#include <filesystem>
#include <memory>
#include <optional>

#include "runtime/error.h"
#include "runtime/parallel.h"
#include "search/lab_fronts.h"
#include "search/lab_objectives.h"
#include "search/lab_plot.h"
#include "search/lab_spaces.h"
#include "search/lab_steps.h"
#include "search/sampler.h"
#include "train/session.h"
#include "train/trainer.h"

namespace mase::search {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace lab_steps;

namespace {

// The precision search's pruner: without QAT a trial is an evaluation, its reports the test
// batches (values of instances), judged by Wilcoxon's pruner; with --qat-steps its reports are
// a curve (PTQ at step 0, then every --eval-every QAT steps), judged by the curve pruners.
// precision_trial_objective refuses the wrong kind by name.
std::optional<PrunerConfig> precision_pruner(const PrecisionOptions& o) {
  MASE_CHECK(o.base.eval_every <= 0 || o.qat_steps > 0, ConfigError, "[search] precision "
             "--eval-every tests during QAT: expected --qat-steps N > 0, got none");
  std::optional<PrunerConfig> p = o.qat_steps > 0
                                      ? parse_pruner(o.prune, o.base.eval_every, o.qat_steps,
                                                     "--qat-steps")
                                      : pruner_from_flags(o.prune);
  if (p) check_precision_pruner(*p, o.qat_steps, o.base.eval_every, o.bits_objective);
  return p;
}

}  // namespace

LabResult run_precision(PrecisionOptions o) {
  MASE_CHECK(!o.init.empty(), ConfigError,
             "[search] expected --init RUN (a trained model to quantize), got none");
  const std::vector<FormatChoices> formats = format_choices(o.formats, o.widths, o.frac_widths);
  MASE_CHECK(o.qat_steps >= 0, ConfigError, "[search] expected --qat-steps >= 0, got ",
             o.qat_steps);
  MASE_CHECK(o.bits_weight >= 0, ConfigError, "[search] expected --bits-weight >= 0, got ",
             o.bits_weight);
  MASE_CHECK(o.per_format || o.mixed, ConfigError,
             "[search] nothing to search: --mixed-only needs --mixed");
  const std::optional<PrunerConfig> pruner = precision_pruner(o);
  MASE_CHECK(!o.bits_objective || o.bits_weight == 0, ConfigError,
             "[search] --bits-weight folds the bits into one value, --objectives accuracy,bits "
             "makes them an objective of their own: give one of the two");
  o.sampler = with_population(o.sampler, o.population);  // the study records its population
  const std::vector<Direction> directions =
      o.bits_objective ? std::vector<Direction>{Direction::maximize, Direction::minimize}
                       : std::vector<Direction>{Direction::maximize};
  make_sampler(o.sampler, o.seed)->set_directions(directions);  // refused now, if at all
  MASE_CHECK(o.base.vocab.empty(), ConfigError, "[precision] --vocab: the trials use --init's "
             "tokenizer (the model was trained with it); drop --vocab");
  // With --workers the copies fork once the studies are open, and oneTBB's pool must not be
  // running then (a copy has none of its threads: its kernels would run on one). Loading --init
  // builds a model, whose random init runs on the pool: before the fork, on this thread alone.
  std::optional<SerialRegion> before_fork;
  if (o.workers > 1) before_fork.emplace();
  train::LoadedModel lm = train::load_model_dir(o.init);  // its tokenizer and max_len
  o.base.vocab = lm.tokenizer_file.string();
  o.base.tokenizer = lm.tokenizer_file.extension() == ".model" ? "sentencepiece" : "wordpiece";
  if (o.base.max_len <= 0) o.base.max_len = lm.max_len;
  check_common(o, "precision");
  const LayerList layers = linear_layer_list(o.init);

  json key = budget_key(o.base);
  key.erase("vocab");  // the tokenizer is --init's: "init" below says it
  key["objective"] = "precision";
  key["init"] = fs::absolute(o.init).lexically_normal().string();
  key["qat_steps"] = o.qat_steps;
  if (o.bits_weight != 0) key["bits_weight"] = o.bits_weight;
  if (o.bits_objective) key["objectives"] = {"accuracy", "avg_weight_bits"};
  if (pruner) key["pruner"] = pruner_key(*pruner, o.base.eval_every);
  std::vector<LabStudy> specs;
  if (o.per_format)
    for (const FormatChoices& f : formats)
      specs.push_back({o.study + "-" + f.format, f.format, o.sampler,
                       precision_space(layers.names, {f}), key});
  if (o.mixed)
    specs.push_back({o.study + "-mixed", "each layer picks", o.sampler,
                     precision_space(layers.names, formats), key});
  if (o.bits_objective)
    for (LabStudy& s : specs) {
      s.directions = directions;
      s.metric_names = {"accuracy", "avg_weight_bits"};
    }
  const LabRun run = make_run(o);
  std::vector<Study> studies = open_lab_studies(specs, run);
  before_fork.reset();
  const auto workers = start_workers(o, studies);
  auto data = std::make_shared<const TrialData>(load_trial_data(o.base, data_log(o, *workers)));
  std::vector<Objective> objectives;
  for (size_t i = 0; i < specs.size(); ++i)
    objectives.push_back(precision_trial_objective(
        specs[i].space, layers, o.init, o.base, data, o.qat_steps,
        fs::path(o.dir) / specs[i].name, null_sink(), o.bits_weight, o.bits_objective,
        pruning_for(studies[i], pruner)));
  // the reference, for the figure's title: the parent's (a copy only runs trials)
  const double fp32 = workers->is_copy() ? 0 : test_model(*lm.model, *data, o.base).accuracy;
  if (!workers->is_copy())
    std::fprintf(o.out, "fp32      %s: accuracy %.4f on the test subset\n", o.init.c_str(), fp32);
  std::string what = o.qat_steps > 0 ? cat("PTQ + ", o.qat_steps, " QAT steps") : "PTQ";
  if (o.bits_weight > 0) what += cat(", value = acc - ", o.bits_weight, " bits/32");
  if (o.bits_objective) what += ", objectives accuracy and bits";
  const std::string title =
      cat("Lab 3: ", fs::path(o.init).filename().string(), " (",
          lm.model->config().num_hidden_layers, " layers, fp32 ", fp32, "), ", what,
          ", tested on ", o.base.test_subset, " reviews (max-len ", o.base.max_len, "); ",
          o.trials, " trials per study");
  LabResult res = finish(studies, specs, objectives, o, title,
                         o.bits_weight > 0 ? "best value so far" : "best test accuracy so far",
                         *workers);
  // QAT's curves, pruned ones where they stopped (Wilcoxon's reports are batches: no curve)
  if (pruner && o.qat_steps > 0 && !res.worker_copy)
    draw_curves(studies, specs, o, o.prune.pruner, res);
  // a copy wrote nothing; finish() drew nothing when no trial is complete (stopped in the first)
  if (res.worker_copy || res.plots.empty()) return res;
  const Series series = draw_pareto(studies, specs, o, title, "avg_weight_bits",
                                    "average bits per weight (fp32 = 32)", res);
  if (o.bits_objective)  // the reference: chance on a label-balanced test set, fp32's bits
    print_fronts(studies, " bits", o.out, FrontReference{{0.5, 32}, "accuracy 0.5, 32 bits"});
  const std::string summary = (fs::path(o.dir) / (o.study + "-summary.csv")).string();
  write_summary_csv(series, "avg_weight_bits", summary);  // one row per format
  res.csvs.push_back(summary);
  std::fprintf(o.out, "summary   %s (one row per study: best, worst, fewest bits)\n",
               summary.c_str());
  return res;
}


}  // namespace mase::search
