// search/sparsity_sweep.h — Lab 1.2: accuracy against sparsity, one curve per pruning method.
//
// Each point prunes the trained model (quant/passes.h's prune pass) with
//   sparsity  s in [0, 1] (exactly round(s·n) values of each tensor, or of all, are masked)
//   method    random | l1-norm
//   scope     local (per tensor / per token vector) | global (all Linear weights together /
//             the whole activation tensor)
//   target    weight | activation | both (weights and each Linear's input, as the course's
//             config does)
//   finetune  no: evaluate at once (the model loaded once: search/sweep_model.h);
//             yes: train `finetune_steps` more steps with the masks fixed, then evaluate.
// One curve per (method, scope, target, finetune) combination asked for; x = sparsity. Points
// without fine-tuning come first (cheap). The objective (model folder, test subset, max_len,
// fine-tuning budget, seed of the random masks) is recorded with the study: re-running skips
// done points, and a different objective under the same --study is refused.
// Read next: tools/sweep_cli.h (the command line), docs/lab1.md.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/sweep_study.h"
#include "train/train_config.h"

namespace mase::search {

struct SparsitySweepOptions {
  train::TrainConfig base;  // as WidthSweepOptions::base; seed also seeds the random masks
  std::vector<double> sparsities;
  std::vector<std::string> methods = {"random", "l1-norm"};
  std::vector<std::string> scopes = {"local"};
  std::vector<std::string> targets = {"both"};
  int64_t finetune_steps = 0;  // > 0: a fine-tuned curve beside each one without
  std::string dir, study = "lab1-sparsity";
  std::vector<std::string> plots;
};

const std::vector<std::string>& prune_methods();  // random, l1-norm
const std::vector<std::string>& prune_scopes();   // local, global
const std::vector<std::string>& prune_targets();  // weight, activation, both

// The prune pass config of one point.
nlohmann::json prune_config(double sparsity, const std::string& method, const std::string& scope,
                            const std::string& target, uint64_t seed);

SweepPlan sparsity_sweep_plan(const SparsitySweepOptions& opt);
int run_sparsity_sweep(const SparsitySweepOptions& opt, std::FILE* out);

}  // namespace mase::search
