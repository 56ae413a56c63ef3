// search/sweep_model.h — what a Lab 1 point does to the trained model: evaluate it after a pass
// (PTQ, pruning without fine-tuning), or train it further through the pass (QAT, fine-tuning).
//
// PassEvaluator loads the model folder and its tokenized test reviews ONCE, then for each point
// applies a pass (quantize, prune), evaluates, and puts the model back as it was: the original
// Linear modules return to their slots and the weights get their loaded values again (pruning
// zeroes weights in place). So a 29-width PTQ sweep costs one load and 29 evaluations.
//
// train_point is one mase-train run with --init MODEL_DIR and a pass config (--quant or
// --prune): the same library call as mase-train (train/session.h), in its own run folder with
// its log, so each QAT / fine-tuned point can be inspected or re-evaluated like any run. It
// evaluates on the same test subset as PassEvaluator (train/evaluate.h's balanced_subset with
// seed 0), so the curves compare on the same reviews.
// Read next: search/width_sweep.h, search/sparsity_sweep.h.
#pragma once
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "quant/prune.h"
#include "search/study.h"
#include "train/session.h"
#include "train/train_config.h"

namespace mase::search {

class PassEvaluator {
 public:
  // config.init is the model folder; data_dir, cache_dir, test_subset, max_len (0 = the
  // run's), eval_batch_size and device are read. Prints what it loaded on `out`.
  PassEvaluator(const train::TrainConfig& config, std::FILE* out);
  // pass(model) (which may return anything), evaluate, restore. The model is restored even if
  // the pass or the evaluation throws.
  train::EvalResult evaluate(const std::function<void(nn::Module&)>& pass);
  int64_t max_len() const { return max_len_; }
  int64_t test_reviews() const { return static_cast<int64_t>(test_.size()); }

 private:
  void restore();
  train::LoadedModel lm_;
  data::TokenizedSplit test_;
  train::EvalOptions eval_;
  int64_t max_len_ = 0;
  std::map<std::string, nn::ModulePtr> originals_;  // the Linear modules, by path
  std::map<std::string, Tensor> weights_;           // copies of every parameter and buffer
  // A QuantizedLinear (a QAT or PTQ model's layers) is pruned in place, not replaced: what
  // restore() must undo besides the values (whether it had a weight mask, its activation
  // pruning), by path.
  struct PruneState {
    bool had_mask = false;
    std::optional<quant::PruneSpec> activation;
  };
  std::map<std::string, PruneState> prune_state_;
};

// One training run from config (config.init = the model folder) with `pass` written to
// <run>.json and given as --quant (pass_flag "quant") or --prune ("prune"); output in <run>.log.
// A folder left at `run` by an earlier, unfinished attempt is removed first. Error if the run
// does not complete.
train::TrainResult train_point(train::TrainConfig config, const nlohmann::json& pass,
                               const std::string& pass_flag, const std::filesystem::path& run);

// A point's outcome from an evaluation: accuracy; attributes test_loss and seconds (added to o's).
Outcome eval_outcome(const train::EvalResult& e, Outcome o = {});
// train_point for `steps` steps, as an outcome: the run's accuracy; test_loss, seconds (the
// run's wall time: training and evaluation) and run (its folder). Says on `out` where the
// run's own progress goes, since a point may train for minutes.
Outcome train_outcome(train::TrainConfig base, int64_t steps, const nlohmann::json& pass,
                      const std::string& pass_flag, const std::filesystem::path& run,
                      std::FILE* out);

// The max_len the run at `model_dir` was trained with (its train_config.json), else 512.
int64_t trained_max_len(const std::filesystem::path& model_dir);

// The budget for a figure's title: "500 test reviews, max_len 128; QAT 50 steps x 16 on 1000
// reviews" (`what` = "QAT"; steps 0: the second part is left out).
std::string budget_text(const train::TrainConfig& base, const std::string& what, int64_t steps);

// The model name for titles: the run's train_config.json "model" (a preset), else the folder.
std::string model_label(const std::filesystem::path& model_dir);

}  // namespace mase::search
