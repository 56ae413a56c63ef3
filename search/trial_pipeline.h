// search/trial_pipeline.h — the steps of a Lab 2/3 trial as library calls, with the data loaded
// once for all trials of a study.
//
// `train::train_new` does everything of one mase-train run but loads IMDb again each time and
// gives no hook between building the model and training it. A search needs both: its trials
// share one tokenized train/test subset, and they change the model before training (Linear ->
// Identity, Lab 2.1) or between training and testing (compress, Lab 2.2; quantize, Lab 3).
// So a trial here is:
//   TrialData d = load_trial_data(base, log);           // once per command
//   auto model = new_model(c, *d.tokenizer);   // Lab 3: train::load_model_dir(init).model
//   ... change the model ...
//   TrainResult r = train_model(c, *model, d, run_dir, log);   // a mase-train run folder
//   EvalResult e = test_model(*model, d, c);
// Read next: search/lab_spaces.h (what a trial changes), search/lab_objectives.h.
#pragma once
#include <cstdio>
#include <filesystem>
#include <memory>

#include "data/dataset.h"
#include "models/bert.h"
#include "search/pruner.h"
#include "train/evaluate.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace mase::search {

struct TrialData {
  data::TokenizedSplit train, test;  // the --train-subset and --test-subset of IMDb
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::filesystem::path tokenizer_path;
  int32_t pad_id = 0;
};

// IMDb with the tokenizer of c.vocab (else the default sentencepiece one), cut to c's subsets
// (train: seeded by c.seed; test: the same reviews for every seed, as mase-train). A read-only
// data folder keeps its tokenizer and token cache in ~/.cache/mase/imdb, as mase-train does.
TrialData load_trial_data(const train::TrainConfig& c, std::FILE* log);

// A model from random init (seed c.seed): c.model's preset (or config.json) with c's
// architecture overrides.
// ConfigError (from BertConfig) for an architecture the heads do not divide.
std::shared_ptr<nn::BertForSequenceClassification> new_model(const train::TrainConfig& c,
                                                             const data::Tokenizer& tokenizer);

// The Trainer::on_eval of trial `number` under a pruner: each evaluation's test accuracy
// reported to the study, which may stop the trial (TrialPruned, search/pruner.h). Empty
// without one.
train::EvalHook report_accuracy(std::shared_ptr<const Pruning> pruning, int64_t number);

// Trains `model` in place with c's recipe (resolved here) into the new run folder `run_dir`
// (train_config.json, logs, final.json, the model). Error if the run did not complete.
// `on_eval` (optional): Trainer::on_eval, e.g. a pruner's report (search/pruner.h).
train::TrainResult train_model(train::TrainConfig c, nn::BertForSequenceClassification& model,
                               const TrialData& d, const std::filesystem::path& run_dir,
                               std::FILE* log, const train::EvalHook& on_eval = {});

// Accuracy and loss on d.test at c.max_len (eval mode, no autograd); on_batch and
// batch_order_seed as train::EvalOptions has them (a pruner judging batch by batch).
train::EvalResult test_model(nn::BertForSequenceClassification& model, const TrialData& d,
                             const train::TrainConfig& c, const train::BatchHook& on_batch = {},
                             uint64_t batch_order_seed = 0);

// "<dir>/trial-NNNN"
std::filesystem::path trial_dir(const std::filesystem::path& dir, int64_t number);

// A FILE* that discards what is written to it, open for the life of the process.
std::FILE* null_sink();

}  // namespace mase::search
