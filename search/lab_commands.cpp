// search/lab_commands.cpp — the lab commands tutorial, compress-aware and custom, and the steps
// they share with precision (lab_precision.cpp). Read lab_commands.h, then lab_steps.h.
#include "search/lab_commands.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "quant/passes.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "search/command_objective.h"
#include "search/lab_fronts.h"
#include "search/lab_objectives.h"
#include "search/lab_plot.h"
#include "search/lab_runner.h"
#include "search/lab_steps.h"
#include "search/nsga2.h"
#include "search/objectives.h"
#include "search/pruner.h"
#include "search/sampler.h"
#include "search/worker_usage.h"
#include "search/workers.h"
#include "train/session.h"
#include "train/trainer.h"

namespace mase::search {
namespace fs = std::filesystem;
using nlohmann::json;

namespace lab_steps {  // the shared steps, documented in lab_steps.h

json budget_key(const train::TrainConfig& c) {
  json key = {{"model", c.model},         {"max_steps", c.max_steps},
              {"batch_size", c.batch_size}, {"train_subset", c.train_subset},
              {"test_subset", c.test_subset}, {"max_len", c.max_len},
              {"lr", c.lr ? json(*c.lr) : json(nullptr)}, {"seed", c.seed}};
  // another tokenizer is another objective (studies made before --vocab existed have none)
  if (!c.vocab.empty()) key["vocab"] = fs::absolute(c.vocab).lexically_normal().string();
  return key;
}

LabRun make_run(const LabOptions& o) {
  LabRun r;
  r.db = o.storage.empty() ? (fs::path(o.dir) / "studies.db").string() : o.storage;
  r.dir = o.dir;
  r.trials = o.trials;
  r.resume = o.resume;
  r.seed = o.seed;
  r.out = o.out;
  return r;
}

void check_common(LabOptions& o, const std::string& command) {
  MASE_CHECK(o.trials >= 1, ConfigError, "[search] expected --trials >= 1, got ", o.trials);
  if (o.study.empty()) o.study = command;
  if (o.plot.empty()) o.plot = (fs::path(o.dir) / (o.study + ".svg")).string();
  const std::string ext = fs::path(o.plot).extension().string();
  MASE_CHECK(ext == ".svg" || ext == ".png", ConfigError,
             "[search] expected --plot ending in .svg or .png, got '", o.plot, "'");
  o.base.seed = o.seed;
  o.base.validate();
  require_device(Device::parse(o.base.device));  // a missing GPU: one line, before any trial
  MASE_CHECK(o.workers >= 1, ConfigError, "[search] expected --workers >= 1, got ", o.workers);
  // a process that has touched CUDA cannot fork children that use it
  MASE_CHECK(o.workers == 1 || Device::parse(o.base.device).is_cpu(), ConfigError,
             "[search] --workers ", o.workers, " expected --device cpu, got ", o.base.device,
             " (start one command per GPU with --resume and CUDA_VISIBLE_DEVICES instead; "
             "docs/scaling.md)");
  if (o.workers > 1 && o.base.threads == 0)  // share the cores, not oversubscribe them
    o.base.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.workers);
}

std::unique_ptr<Workers> start_workers(const LabOptions& o, std::vector<Study>& studies) {
  std::fflush(o.out);
  auto workers = std::make_unique<Workers>(o.workers, std::span<Study>(studies));
  set_num_threads(o.base.threads);
  return workers;
}

std::FILE* data_log(const LabOptions& o, const Workers& w) {
  return w.is_copy() ? null_sink() : o.out;
}

LabResult finish(std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                 const std::vector<Objective>& objectives, const LabOptions& o,
                 const std::string& title, const std::string& ylabel, Workers& workers) {
  const LabRun run = make_run(o);
  LabResult res;
  Series series;
  size_t ran = 0;
  for (; ran < studies.size() && !train::stop_requested(); ++ran) {
    if (!workers.is_copy())
      std::fprintf(o.out, "study     %s (%s): sampler %s, %d trials%s\n",
                   specs[ran].name.c_str(), specs[ran].label.c_str(),
                   specs[ran].sampler.c_str(), o.trials,
                   o.workers > 1 ? cat(", ", o.workers, " workers").c_str() : "");
    run_lab_trials(studies[ran], objectives[ran], run);
  }
  if (workers.is_copy()) {
    res.worker_copy = true;
    return res;
  }
  MASE_CHECK(workers.wait() == 0 || train::stop_requested(), Error,
             "[search] a worker process failed (its error is above); the trials it finished "
             "are kept: continue with --resume");
  if (o.workers > 1)  // where the workers' time went: trials, their start, the wait at the end
    std::fprintf(o.out, "workers   %s\n", describe_run(studies, workers).c_str());
  for (size_t i = 0; i < studies.size(); ++i) {
    // a study this process did not reach may hold its copies' trials (Ctrl-C stops each
    // process in the study it is in, and a copy may be a study ahead): its CSV too
    if (i >= ran && studies[i].trials().empty()) continue;
    const std::string csv = (fs::path(o.dir) / (specs[i].name + ".csv")).string();
    studies[i].write_csv(csv);
    res.csvs.push_back(csv);
    res.studies.push_back(specs[i].name);
  }
  bool any_complete = false;
  for (size_t i = 0; i < studies.size(); ++i) {
    series.emplace_back(specs[i].label, studies[i].trials());
    any_complete = any_complete || !completed(series.back().second).empty();
  }
  for (const std::string& csv : res.csvs) std::fprintf(o.out, "csv       %s\n", csv.c_str());
  if (!any_complete) {  // stopped during the first trial: nothing to draw (gnuplot would fail)
    std::fprintf(o.out, "plot      none: no trial complete yet\n");
    return res;
  }
  plot_best_so_far(series, title, ylabel, o.plot, specs.front().direction);
  res.plots.push_back(o.plot);
  std::fprintf(o.out, "plot      %s (data %s.dat, script %s.gp)\n", o.plot.c_str(),
               o.plot.c_str(), o.plot.c_str());
  return res;
}

std::shared_ptr<const Pruning> pruning_for(Study& study, const std::optional<PrunerConfig>& p) {
  return p ? std::make_shared<const Pruning>(study, *p) : nullptr;
}

void draw_curves(std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                 const LabOptions& o, const std::string& pruner, LabResult& res,
                 bool trains) {
  const std::string ext = fs::path(o.plot).extension().string();
  for (size_t i = 0; i < studies.size(); ++i) {
    const std::string path = (fs::path(o.dir) / (specs[i].name + "-curves" + ext)).string();
    const std::vector<TrialRecord> trials = studies[i].trials();
    const bool any = std::any_of(trials.begin(), trials.end(),
                                 [](const TrialRecord& r) { return !r.intermediate.empty(); });
    if (!any) continue;  // nothing reported yet (stopped before an evaluation)
    const std::string how = cat(" (", specs[i].sampler, ", ", pruner, " pruner)");
    if (trains)
      plot_intermediate(trials, cat(specs[i].name, ": test accuracy during training", how), path);
    else
      plot_intermediate(trials, cat(specs[i].name, ": the values reported", how), path, "step",
                        "value");
    res.plots.push_back(path);
    std::fprintf(o.out, "curves    %s\n", path.c_str());
  }
}

Series draw_pareto(const std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                   const LabOptions& o, const std::string& title, const std::string& x_attr,
                   const std::string& xlabel, LabResult& res) {
  Series series;
  for (size_t i = 0; i < studies.size(); ++i)
    series.emplace_back(specs[i].label, studies[i].trials());
  const fs::path p(o.plot);
  const std::string pareto =
      (p.parent_path() / (p.stem().string() + "-pareto" + p.extension().string())).string();
  plot_pareto(series, x_attr, title, xlabel, pareto);
  res.plots.push_back(pareto);
  std::fprintf(o.out, "pareto    %s\n", pareto.c_str());
  return series;
}

std::string with_population(const std::string& s, int64_t population) {
  return s == "nsga2" && population != Nsga2Options{}.population_size ? cat("nsga2:", population)
                                                                      : s;
}

}  // namespace lab_steps
using namespace lab_steps;

namespace {

std::string budget_text(const train::TrainConfig& c) {
  return cat(c.model, ", ", c.max_steps, " steps of ", c.batch_size, " on ", c.train_subset,
             " reviews, max-len ", c.max_len, ", tested on ", c.test_subset);
}

// --pruner: checked with the other flags; what it is joins the objective key (pruned trials
// are results of the pruner as much as of the budget).
std::optional<PrunerConfig> check_pruner(const PruneOptions& p, const train::TrainConfig& base,
                                         json& key) {
  std::optional<PrunerConfig> pruner = parse_pruner(p, base.eval_every, base.max_steps);
  if (pruner) key["pruner"] = pruner_key(*pruner, base.eval_every);
  return pruner;
}

// --max-params N: the trial's constraint "params" = its parameters (attribute) − N.
Objective within_budget(Objective objective, int64_t max_params) {
  if (max_params <= 0) return objective;
  return [objective, max_params](const Params& p, int64_t number) {
    Outcome o = objective(p, number);
    if (auto it = o.attrs.find("parameters"); it != o.attrs.end())
      o.constraints["params"] = std::stod(it->second) - static_cast<double>(max_params);
    return o;
  };
}

Space arch_space(const ArchChoices& a) {
  return architecture_space(a.layers, a.heads, a.hidden, a.intermediate);
}

// ---- tutorial, compress-aware: --objectives accuracy,params ----
const std::vector<Direction> kAccuracyParams = {Direction::maximize, Direction::minimize};

// A pruner judges one value as a trial trains (Study::report refuses a study of two objectives,
// as Optuna's report does): refused before anything is written.
void check_params_objective(bool two, const PruneOptions& p) {
  MASE_CHECK(!two || p.pruner == "none", ConfigError, "[search] --objectives accuracy,params "
             "expected --pruner none, got --pruner ", p.pruner, " (a pruner judges one value as "
             "a trial trains; a study of two objectives has two)");
}

// with_population's name, told the directions now (a sampler that ranks one value would refuse
// two, before anything is written).
std::string arch_sampler(const std::string& s, bool two, int64_t population, uint64_t seed) {
  const std::string name = with_population(s, population);
  make_sampler(name, seed)->set_directions(two ? kAccuracyParams
                                               : std::vector<Direction>{Direction::maximize});
  return name;
}

void set_params_objective(LabStudy& s) {
  s.directions = kAccuracyParams;
  s.metric_names = {"accuracy", "parameters"};
  s.objective["objectives"] = s.metric_names;  // another objective: another study
}

// After the trials, in the process that started them: accuracy against parameters (every
// complete trial, each study's front as a line) beside --plot, and each study's front with its
// hypervolume from accuracy 0.5 and the space's largest model.
void finish_params_pareto(const std::vector<Study>& studies, const std::vector<LabStudy>& specs,
                          const LabOptions& o, const std::string& title, const TrialData& data,
                          LabResult& res) {
  if (res.worker_copy || res.plots.empty()) return;  // no complete trial: nothing to draw
  draw_pareto(studies, specs, o, title, "parameters", "trainable parameters", res);
  const int64_t largest = largest_model_parameters(specs.front().space, o.base, *data.tokenizer);
  print_fronts(studies, " parameters", o.out, parameters_reference(largest));
}

}  // namespace

LabResult run_tutorial(TutorialOptions o) {
  check_common(o, "tutorial");
  MASE_CHECK(!o.samplers.empty(), ConfigError, "[search] expected a non-empty list for --samplers");
  check_params_objective(o.params_objective, o.prune);
  const Space space = tutorial_space(o.linear, arch_space(o.arch));
  json key = budget_key(o.base);
  key["objective"] = "architecture";
  const std::optional<PrunerConfig> pruner = check_pruner(o.prune, o.base, key);
  MASE_CHECK(o.max_params >= 0, ConfigError, "[search] expected --max-params N >= 0 (0: no "
             "budget), got ", o.max_params);
  if (o.max_params > 0) key["max_params"] = o.max_params;  // another budget: another study
  std::vector<LabStudy> specs;
  for (const std::string& s : o.samplers) {  // ConfigError for an unknown name
    specs.push_back({o.study + "-" + s, s,
                     arch_sampler(s, o.params_objective, o.population, o.seed), space, key});
    if (o.params_objective) set_params_objective(specs.back());
  }
  const LabRun run = make_run(o);
  std::vector<Study> studies = open_lab_studies(specs, run);
  const auto workers = start_workers(o, studies);
  auto data = std::make_shared<const TrialData>(load_trial_data(o.base, data_log(o, *workers)));
  std::vector<Objective> objectives;
  for (size_t i = 0; i < specs.size(); ++i)
    objectives.push_back(within_budget(
        arch_trial_objective(space, o.base, data, {}, fs::path(o.dir) / specs[i].name,
                             null_sink(), pruning_for(studies[i], pruner), o.params_objective),
        o.max_params));
  const std::string title = cat("Lab 2.1: ", budget_text(o.base), "; ", architecture_text(space),
                                "; ", o.trials, " trials per sampler",
                                o.params_objective ? ", objectives accuracy and parameters" : "");
  LabResult res = finish(studies, specs, objectives, o, title, "best test accuracy so far",
                         *workers);
  if (pruner && !res.worker_copy) draw_curves(studies, specs, o, o.prune.pruner, res);
  if (o.params_objective) finish_params_pareto(studies, specs, o, title, *data, res);
  return res;
}

LabResult run_compress_aware(CompressAwareOptions o) {
  check_common(o, "compress-aware");
  MASE_CHECK(o.compress.is_object() && !o.compress.empty(), ConfigError,
             "[search] expected --compress FILE with {\"quantize\": ..., \"prune\": ...}");
  quant::check_compress_sections(o.compress);  // a typo refused before any study is written
  MASE_CHECK(!o.variants.empty(), ConfigError, "[search] expected a non-empty list for --variants");
  check_params_objective(o.params_objective, o.prune);
  const std::string sampler = arch_sampler(o.sampler, o.params_objective, o.population, o.seed);
  const Space space = tutorial_space(o.linear, arch_space(o.arch));
  json pruner_key;
  const std::optional<PrunerConfig> pruner = check_pruner(o.prune, o.base, pruner_key);
  std::vector<LabStudy> specs;
  std::vector<CompressStep> steps;
  for (const std::string& v : o.variants) {
    json key = budget_key(o.base);
    key["objective"] = "architecture";
    if (pruner) key["pruner"] = pruner_key["pruner"];
    CompressStep step;
    if (v == "compressed" || v == "post-trained") {
      key["compress"] = o.compress;
      step.config = o.compress;
    }
    if (v == "post-trained") {
      MASE_CHECK(o.post_steps >= 1, ConfigError, "[search] expected --post-steps >= 1, got ",
                 o.post_steps);
      key["post_steps"] = o.post_steps;
      step.post_steps = o.post_steps;
    }
    MASE_CHECK(v == "plain" || v == "compressed" || v == "post-trained", ConfigError,
               "[search] --variants: unknown variant '", v,
               "' (known: plain, compressed, post-trained)");
    const std::string label = v == "plain"        ? "no compression"
                              : v == "compressed" ? "compression-aware"
                                                  : cat("compression-aware + ", o.post_steps,
                                                        " steps after");
    specs.push_back({o.study + "-" + v, label, sampler, space, key});
    if (o.params_objective) set_params_objective(specs.back());
    steps.push_back(step);
  }
  const LabRun run = make_run(o);
  std::vector<Study> studies = open_lab_studies(specs, run);
  const auto workers = start_workers(o, studies);
  auto data = std::make_shared<const TrialData>(load_trial_data(o.base, data_log(o, *workers)));
  std::vector<Objective> objectives;
  for (size_t i = 0; i < specs.size(); ++i)
    objectives.push_back(arch_trial_objective(space, o.base, data, steps[i],
                                              fs::path(o.dir) / specs[i].name, null_sink(),
                                              pruning_for(studies[i], pruner),
                                              o.params_objective));
  const std::string title = cat("Lab 2.2: ", budget_text(o.base), "; ", architecture_text(space),
                                "; ", o.trials, " trials, ", sampler,
                                o.params_objective ? ", objectives accuracy and parameters" : "");
  LabResult res = finish(studies, specs, objectives, o, title, "best test accuracy so far",
                         *workers);
  if (pruner && !res.worker_copy) draw_curves(studies, specs, o, o.prune.pruner, res);
  if (o.params_objective) finish_params_pareto(studies, specs, o, title, *data, res);
  return res;
}

LabResult run_custom(CustomOptions o) {
  check_common(o, "custom");
  MASE_CHECK(!o.minimize || o.directions.empty(), ConfigError,
             "[search] --minimize and --directions both give the direction: expected one of "
             "the two, got both (--directions minimize is --minimize)");
  const std::vector<Direction> directions =
      !o.directions.empty() ? o.directions
                            : std::vector<Direction>{o.minimize ? Direction::minimize
                                                                : Direction::maximize};
  const size_t n = directions.size();
  MASE_CHECK(o.metric_names.empty() || o.metric_names.size() == n, ConfigError,
             "[search] --metric-names expected ", n, n == 1 ? " name" : " names (one per "
             "objective of --directions)", ", got ", o.metric_names.size());
  for (size_t i = 0; i < o.metric_names.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MASE_CHECK(o.metric_names[i] != o.metric_names[j], ConfigError, "[search] --metric-names "
                 "expected a different name for each objective, got '", o.metric_names[i],
                 "' twice");
  o.sampler = with_population(o.sampler, o.population);  // the study records its population
  make_sampler(o.sampler, o.seed)->set_directions(directions);  // refused now, if at all
  const Space space = parse_space_spec(o.space);
  (void)command_objective(space, o.command, n);  // checks the placeholders now
  const std::optional<PrunerConfig> pruner = pruner_from_flags(o.prune);
  MASE_CHECK(!pruner || n == 1, ConfigError, "[search] --directions with ", n, " objectives "
             "expected --pruner none, got --pruner ", o.prune.pruner, " (a pruner judges one "
             "value as a trial runs)");
  LabStudy spec{o.study, o.sampler, o.sampler, space, {{"objective", "command"}, {"command", o.command}}};
  spec.direction = directions.front();  // what the best-so-far figure plots: objective 0
  if (n > 1) {
    spec.directions = directions;
    json words = json::array();  // another count or order of directions: another objective
    for (Direction d : directions) words.push_back(d == Direction::minimize ? "minimize" : "maximize");
    spec.objective["directions"] = words;
  }
  spec.metric_names = o.metric_names;
  if (pruner) {  // the steps are the command's: no --eval-every in the key
    spec.objective["pruner"] = pruner_key(*pruner, 0);
    spec.objective["pruner"].erase("eval_every");
  }
  std::vector<Study> studies = open_lab_studies({spec}, make_run(o));
  Objective objective = command_objective(space, o.command, n, pruning_for(studies[0], pruner));
  const auto workers = start_workers(o, studies);
  const std::string first = !o.metric_names.empty() ? o.metric_names[0]
                            : n > 1                   ? std::string("objective 0")
                                                      : std::string("value");
  LabResult res = finish(studies, {spec}, {objective}, o,
                         cat("mase-search custom: ", o.command, "; ", o.trials, " trials, ",
                             o.sampler, n > 1 ? cat(", objective 0 of ", n) : std::string()),
                         cat(spec.direction == Direction::minimize ? "lowest " : "best ", first,
                             " so far"),
                         *workers);
  if (n > 1 && !res.worker_copy) print_fronts(studies, "", o.out);
  if (pruner && !res.worker_copy) draw_curves(studies, {spec}, o, o.prune.pruner, res, false);
  return res;
}

}  // namespace mase::search
