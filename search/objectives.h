// search/objectives.h — what a trial of plain `mase-search` computes: Lab 2's architecture
// objective (the lab commands' trials, Labs 2.1, 2.2 and 3, are search/lab_objectives.h).
//
// An objective turns a trial's parameters into a number to maximize (search/study.h's
// Objective). The one here trains a BERT through the same library calls as mase-train
// (train/session.h), each trial in its own run folder, so every trial leaves what a mase-train
// run leaves (train_log.jsonl, metrics.csv, final.json, the model) and can be inspected,
// re-evaluated or resumed like one.
//
// Architecture search (Lab 2, tutorial 5): the trial's num_layers, num_heads, hidden_size and
// intermediate_size replace the base preset's (TrainConfig's architecture overrides), the
// model trains from random init with the base config's recipe and budget (--max-steps,
// --train-subset: a trial must fit a CPU), and the objective is the test accuracy. Unlike the
// original tutorial, num_layers and num_heads really change the model. Architectures the
// heads do not divide (hidden_size % num_heads != 0) are refused by BertConfig and the trial
// is recorded as failed, not silently altered.
#pragma once
#include <filesystem>
#include <string>

#include "search/pruner.h"
#include "search/study.h"
#include "train/train_config.h"

namespace mase::search {

// Lab 2's space: num_layers {2, 4, 8}, num_heads {2, 4, 8, 16},
// hidden_size {128, 192, 256, 384, 512}, intermediate_size {512, 768, 1024, 1536, 2048}.
Space lab2_space();

// The names an architecture space may use (any subset; each categorical of integers or integer).
const std::vector<std::string>& architecture_params();

// Trains `base` with the trial's architecture into `trials_dir`/trial-NNNN and returns its
// test accuracy; attributes: parameters (trainable), test_loss, train_tokens_per_s, wall_s, run.
// ConfigError at once if `space` has a parameter this objective does not know. `out` receives
// each trial's mase-train output (nullptr: discarded). With `pruning` (base.eval_every > 0,
// else ConfigError), each evaluation during training is reported to the study and a trial the
// pruner stops returns state pruned with its last accuracy (search/pruner.h).
Objective architecture_objective(const Space& space, train::TrainConfig base,
                                 std::filesystem::path trials_dir, std::FILE* out = nullptr,
                                 std::shared_ptr<const Pruning> pruning = nullptr);

}  // namespace mase::search
