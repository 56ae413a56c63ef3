// search/lab_objectives.h — the trials of Lab 2.1 (the tutorial's whole space), Lab 2.2
// (compression-aware search) and Lab 3 (per-layer precision), over data loaded once.
//
// Architecture trial (Labs 2.1 and 2.2), in <dir>/trial-NNNN (a mase-train run folder):
//   build the trial's architecture from random init -> Linear-or-Identity (lab_spaces.h) ->
//   train (base's recipe and budget) -> [compress: quant::compress(config) -> test ->
//   [train `post_steps` more steps, the compressed model, in trial-NNNN/post]] -> value = the
//   last test accuracy. Attributes: accuracy_trained, accuracy_compressed, accuracy_post (the
//   ones that ran), parameters (trainable, Identity layers have none), identity_layers,
//   weight_sparsity, test_loss, wall_s, run. With `params_objective` two values (Outcome::values:
//   the accuracy, `parameters`) for a study of two objectives (search/nsga2.h).
// Precision trial (Lab 3): a fresh copy of the trained model of `init` (its tokenizer, the
//   test set tokenized once) -> the trial's per-layer quantize config -> test (PTQ) ->
//   [`qat_steps` steps of quantization-aware training in trial-NNNN, then test]. Value = the
//   last accuracy − bits_weight · avg_weight_bits / 32 (bits_weight 0: the accuracy; > 0: a
//   scalarized two-objective search, accuracy up and bits down); with `bits_objective` two
//   values instead (Outcome::values: the accuracy, avg_weight_bits) for a study of two
//   objectives (search/nsga2.h); attributes: accuracy (the last one), accuracy_ptq,
//   accuracy_qat, avg_weight_bits, quantized_layers, test_loss, wall_s.
// Read next: search/lab_commands.h (the commands that run them).
#pragma once
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "search/pruner.h"
#include "search/study.h"
#include "search/trial_pipeline.h"

namespace mase::search {

struct CompressStep {
  nlohmann::json config;   // {"quantize": ..., "prune": ...}; null: no compression
  int64_t post_steps = 0;  // > 0: train again after compressing
};

// ConfigError at once for a parameter that is neither an architecture parameter
// (architecture_params) nor a Linear-or-Identity one. With `pruning`, every evaluation during
// training (base.eval_every) reports the test accuracy to the trial's study; a trial the pruner
// stops returns state pruned, its last accuracy as value and attribute `pruned_at_step`.
Objective arch_trial_objective(const Space& space, train::TrainConfig base,
                               std::shared_ptr<const TrialData> data, CompressStep compress,
                               std::filesystem::path trials_dir, std::FILE* log,
                               std::shared_ptr<const Pruning> pruning = nullptr,
                               bool params_objective = false);

// The Linears of the model in `init`: dotted paths and weight counts, in model order.
struct LayerList {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
};
LayerList linear_layer_list(const std::filesystem::path& init);

// A precision trial quantizes --init and tests it (PTQ), then optionally fine-tunes it
// (qat_steps). With `pruning`, a trial reports values — accuracies less the bits penalty when
// bits_weight is set — and the pruner may stop it: state pruned, its last value its value,
// attribute pruned_at_step. What a report is depends on QAT:
//   - PTQ only: each test batch, at step = the batch's index, the batches visited in an order
//     shuffled per trial, judged by Wilcoxon's pruner (search/wilcoxon.h; refused otherwise);
//     a stopped trial also has batches_tested and accuracy_so_far;
//   - with qat_steps: the trial's curve — the PTQ accuracy at step 0 (a trial can be stopped
//     before any QAT step is spent on it), the test every base.eval_every QAT steps, the final
//     one recorded at the end — judged by a curve pruner (median, halving, ...; Wilcoxon's is
//     refused, as is eval_every outside [1, qat_steps)).
// Two objectives (bits_objective) take no pruner.
// ConfigError unless `pruner` fits the reports above: Wilcoxon's without QAT, a curve pruner
// with it and then tests during QAT (eval_every in [1, qat_steps)); one objective either way.
void check_precision_pruner(const PrunerConfig& pruner, int64_t qat_steps, int64_t eval_every,
                            bool bits_objective);
Objective precision_trial_objective(const Space& space, const LayerList& layers,
                                    std::filesystem::path init, train::TrainConfig base,
                                    std::shared_ptr<const TrialData> data, int64_t qat_steps,
                                    std::filesystem::path trials_dir, std::FILE* log,
                                    double bits_weight = 0, bool bits_objective = false,
                                    std::shared_ptr<const Pruning> pruning = nullptr);

}  // namespace mase::search
