// train/session.h — what mase-train does, as library calls: a new run, a resumed run, an
// evaluation of a saved model, a prediction. tools/mase_train.cpp only parses flags and calls
// these; tests call them too (in process, with made-up data).
//
// A new run (train_new):
//   1. check the config (resolve_recipe), that --out is free, the device, and the --init
//      folder's config.json — everything that can be refused before the slow work;
//   2. data: load_imdb (data/dataset.h) with the tokenizer of --vocab, of the --init folder,
//      or the default one (sentencepiece trained on IMDb train); subsets if asked;
//   3. model: manual_seed(seed), then a preset / config.json from scratch, or the --init
//      folder's config.json + weights; --dropout and --pooling applied; --freeze; moved to
//      --device; its vocabulary must be the tokenizer's;
//   4. run folder: train_config.json, the tokenizer file; print the summary;
//   5. Trainer::fit.
// A resumed run reads train_config.json and the tokenizer back from the run folder, builds the
// model from the latest checkpoint's config.json and restores the checkpoint.
//
// Read next: train/trainer.h, tools/mase_train.cpp.
#pragma once
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "train/data_parallel.h"
#include "train/evaluate.h"
#include "train/forward.h"
#include "train/trainer.h"

namespace mase::train {

// Called after every step with (step, loss): Trainer::on_step (tests stop runs with it).
using StepHook = std::function<void(int64_t step, double loss)>;

// Start a run from `config` (recipe not yet resolved: train_new resolves it). With `dp`, as one
// rank of a data-parallel run (train/data_parallel.h): rank 0 picks the run folder and writes;
// every rank must have the same config (ConfigError on all ranks otherwise).
// `forward`: how the model is run (train/forward.h); empty = eager with nn::fuse_kernels;
// mase-train --compile passes graph::compiled_forward (then no fuse_kernels: the compiler
// decides the fusions on the graph). Same for resume() and eval_only().
// `on_eval`: Trainer::on_eval (a search's pruner, search/pruner.h).
TrainResult train_new(TrainConfig config, std::FILE* out = stdout, const StepHook& on_step = {},
                      DataParallel* dp = nullptr, const ForwardFactory& forward = {},
                      const EvalHook& on_eval = {});

// What a resumed run may change: how fast it runs and what it prints, not what it computes.
// (A different thread count may change float rounding: the run is then no longer bit-identical
// to an uninterrupted one.)
struct ResumeOverrides {
  std::optional<int> threads;
  std::optional<std::string> device;
  std::optional<int64_t> log_every;
};
TrainResult resume(const fs::path& run_dir, const ResumeOverrides& overrides = {},
                   std::FILE* out = stdout, const StepHook& on_step = {},
                   DataParallel* dp = nullptr, const ForwardFactory& forward = {});

// --eval-only: the model of config.init (a run folder or HF folder) on the test split (or
// --test-subset of it), with the tokenizer found there (or --vocab). max_len 0 means the one the
// run was trained with (its train_config.json; 512 for an HF folder). Prints and returns it.
EvalResult eval_only(TrainConfig config, std::FILE* out = stdout,
                     const ForwardFactory& forward = {});

// A model folder ready to use: the model (eval mode) and its tokenizer. `dir` is a finished run
// folder, a run folder still training (its latest checkpoint is used) or an HF folder with
// vocab.txt; max_len comes from the run's train_config.json (else 512).
struct LoadedModel {
  std::shared_ptr<nn::BertForSequenceClassification> model;
  std::shared_ptr<const data::Tokenizer> tokenizer;
  int64_t max_len = 512;
  fs::path weights;         // the model.safetensors that was loaded
  fs::path tokenizer_file;  // the vocab.txt or tokenizer.model
};
LoadedModel load_model_dir(const fs::path& dir, const std::string& vocab = "");

// Trainable parameters per top-level part ("bert.embeddings", "bert.encoder", "bert.pooler",
// "classifier") and in total, as printed at the start of a run.
std::vector<std::pair<std::string, int64_t>> parameter_counts(const nn::Module& model);

// Marks every parameter whose path matches `regex` (std::regex_search, ECMAScript) as frozen;
// returns how many tensors. ConfigError if the regex is invalid or matches nothing.
int64_t freeze_parameters(nn::Module& model, const std::string& regex);

}  // namespace mase::train
