// train/trainer.h — the training loop: steps, evaluations, checkpoints, stop and resume.
//
// One step — Trainer::train_step, which runs train/train_step.h (the llm.c loop, with BERT's
// fine-tuning pieces):
//   batch   = batches of epoch e, in the order of (seed, e), moved to the device  data/batch.h
//   lr      = lr_peak · schedule.factor(step)                         train/lr_schedule.h
//   loss    = cross_entropy(model(batch), labels)   (train mode: dropout on)
//   stop if loss is NaN/±inf                        (before touching the weights)
//   backward(loss); norm = clip_grad_norm(params, clip)
//   stop if norm is NaN/±inf
//   AdamW step (no decay on biases and LayerNorm weights); zero_grad
// fit() loops over it; around each step: counters (count_step), every --log-every steps a line
// (train_log.jsonl and the screen: log_step), every --eval-every steps and at each epoch end
// an evaluation on the test split (metrics.csv), every --ckpt-every steps and at each epoch
// end a checkpoint (after_step, end_epoch); at the end the final model and final.json.
//
// A checkpoint holds everything the rest of the run depends on — weights, AdamW's exp_avg,
// exp_avg_sq and step counts, the step, the epoch and the next batch in it, and the dropout
// generator's (seed, offset) — so restore() + fit() continues exactly where the run was: the
// batch order is a function of (seed, epoch) and dropout masks of (seed, offset), so the
// resumed run takes bit-identical steps and reaches bit-identical weights
// (tests/train/test_trainer_resume.cpp checks it).
//
// Stopping: request_stop() (what Ctrl-C, SIGTERM, SIGHUP call: install_stop_handlers) makes
// fit() finish the step in progress, save a checkpoint and return `interrupted`. A NaN or
// infinite loss or gradient returns `diverged` at once: nothing is saved, so the last
// checkpoint is the last good state.
//
// Data parallel (train/data_parallel.h): with set_data_parallel, each step trains on this
// rank's rows of the batch and averages the gradients over the ranks; only rank 0 writes logs,
// evaluations, checkpoints and the final model.
//
// Read next: train/session.h (data, model and run folder around this loop).
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "models/bert.h"
#include "train/adamw.h"
#include "train/evaluate.h"
#include "train/forward.h"
#include "train/lr_schedule.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/train_config.h"
#include "runtime/profiler.h"
#include "train/graph_step.h"
#include "train/train_step.h"

namespace mase::train {

class DataParallel;

// ---- stopping -----------------------------------------------------------------------------
void request_stop();     // async-signal-safe: a lock-free atomic store
bool stop_requested();
void clear_stop();
// SIGINT, SIGTERM and SIGHUP (unless ignored: nohup) call request_stop() (and print one line
// saying so); a second signal ends the process at once, _exit(128 + signal) (checkpoints are
// atomic: nothing breaks).
void install_stop_handlers();

// ---- what a checkpoint's trainer_state.json holds ----------------------------------------
struct TrainerState {
  int64_t step = 0;    // optimizer steps taken
  int64_t epoch = 0;   // the epoch in progress, from 0
  int64_t batch = 0;   // the next batch of that epoch (== batches per epoch: epoch end pending)
  uint64_t generator_seed = 0, generator_offset = 0;  // dropout's Philox stream
  uint64_t data_seed = 0;                              // batch order (and train subset)
  int64_t train_tokens = 0;  // real tokens trained on
  double train_seconds = 0, eval_seconds = 0, wall_seconds = 0;
  double log_loss_sum = 0, epoch_loss_sum = 0;  // training losses since the last log / eval
  int64_t log_loss_count = 0, epoch_loss_count = 0;
  int64_t last_eval_step = -1;
  EvalResult last_eval;
  int64_t world_size = 1;  // ranks of the run that wrote it (resume needs as many)

  nlohmann::json to_json() const;
  static TrainerState from_json(const nlohmann::json& j, const std::string& source);
};

enum class TrainStatus { completed, interrupted, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::completed;
  int64_t step = 0;
  EvalResult eval;              // the last evaluation on the test split
  std::vector<double> losses;   // every step's loss, in this process
  double train_tokens_per_s = 0, wall_s = 0;
  std::string message;          // interrupted / diverged: what happened and what to do next
  fs::path checkpoint;          // the last checkpoint written (may be empty)
};

// ConfigError unless the checkpoint folder was written by a run of `world` ranks (resume needs
// as many: each rank's share of the batch and its dropout stream depend on it).
void check_world_size(const fs::path& checkpoint, int64_t world);

// Trainer::on_eval's type.
using EvalHook = std::function<void(int64_t step, const EvalResult& e)>;

class Trainer {
 public:
  // `config` must be resolved (resolve_recipe); `model` already on config.device, with its
  // frozen parameters marked (requires_grad false). The splits, model and run folder must
  // outlive the Trainer. `out`: where progress and messages go (stdout in mase-train).
  Trainer(const TrainConfig& config, nn::BertForSequenceClassification& model,
          const data::TokenizedSplit& train, const data::TokenizedSplit& test, int32_t pad_id,
          const RunDir& run, std::FILE* out = stdout);

  // Continue from a checkpoint folder (RunDir::latest_checkpoint()): weights, optimizer state,
  // position, generator. ConfigError / IoError if it does not fit this model and config.
  void restore(const fs::path& checkpoint);
  // Train as one of dp->world() ranks (before restore and fit; dp must outlive the Trainer).
  void set_data_parallel(DataParallel* dp);
  TrainResult fit();  // train_step over every batch of every epoch, with the schedules around it
  // One optimizer step on one (CPU) batch; the weights move only when loss and norm are finite.
  StepResult train_step(const data::Batch& batch);

  int64_t steps_per_epoch() const { return batches_.num_batches(); }
  int64_t total_steps() const { return total_steps_; }
  const AdamW& optimizer() const { return *optimizer_; }
  const GraphStep* graph_step() const { return graph_step_.get(); }  // null without --cuda-graphs
  const TrainerState& state() const { return state_; }

  // The model call of every step and evaluation (train/forward.h): eager unless replaced
  // (mase-train --compile sets a compiled plan's).
  void set_forward(Forward f);

  // Called after every step with (step, loss): tests use it to request a stop mid-run.
  std::function<void(int64_t step, double loss)> on_step;
  // Called after each evaluation before the last step (--eval-every, epoch ends) with (step,
  // result): a search reports it to its study, whose pruner may end the trial by throwing
  // (search/pruner.h) — the exception leaves fit() as it is, the run folder as it was.
  // One process only: under data parallelism only rank 0 evaluates (the others would see a
  // stale result), and a throw on one rank leaves the others in their next all-reduce.
  EvalHook on_eval;

 private:
  // around the step (trainer.cpp, "around the step")
  void count_step(const StepResult& s, double seconds);
  void log_step(const StepResult& s);
  void after_step();  // evaluation and checkpoint on their --eval-every / --ckpt-every schedules
  void end_epoch();   // evaluation, then a checkpoint positioned at the next epoch's start
  void checkpoint();
  TrainResult finish(TrainStatus status, std::string message);
  TrainResult interrupted();
  TrainResult diverged(const char* what, double value);
  EvalResult run_evaluation();
  void save_model(const fs::path& dir);  // the plain model (models/), then quant/'s sidecar
  fs::path save_checkpoint();
  void write_final(const TrainResult& r);
  double epoch_position() const;  // state_.epoch + batch / batches per epoch
  double wall() const;            // wall seconds of the run so far, earlier processes included

  TrainConfig config_;
  nn::BertForSequenceClassification& model_;
  Forward forward_;
  const data::TokenizedSplit& test_;
  data::Batcher batches_;
  const RunDir& run_;
  std::unique_ptr<AdamW> optimizer_;
  LrSchedule schedule_;
  int64_t total_steps_ = 0, epochs_ = 0;
  int32_t pad_id_ = 0;
  Device device_;
  TrainerState state_;
  Progress progress_;
  std::chrono::steady_clock::time_point fit_start_{};
  double wall_at_start_ = 0;  // state_.wall_seconds when fit() began
  struct FitCounters {        // state_ when fit() began: tokens/s and ETA of this process
    double train_seconds = 0;
    int64_t step = 0, tokens = 0;
  } fit_;
  Tensor clip_state_;           // the GPU step's norm, clip coefficient, finite flag, loss
  std::unique_ptr<GraphStep> graph_step_;  // --cuda-graphs (train/graph_step.h)
  StepResult profiled_step(const data::Batch& batch);  // --profile (trainer.cpp)
  StepResult data_parallel_step(const data::Batch& batch);  // under mpirun (trainer.cpp)
  std::unique_ptr<profile::Profiler> profiler_;
  std::unique_ptr<profile::ProfileSummary> profile_;
  int64_t profiled_ = 0;
  std::vector<double> losses_;  // every step's loss, in this process
  bool root() const;  // rank 0, or no data parallelism: the process that writes
  // A stop was asked for: of this process, or (data parallel) of any rank, as of the last step
  // (all ranks then stop after the same step)
  bool should_stop() const;
  bool dp_stop_ = false;
  DataParallel* dp_ = nullptr;
  std::vector<Tensor> dp_params_;  // the trainable parameters, in the optimizer's order
  double dp_allreduce_s_ = 0;      // seconds in the gradient all-reduce, this process
  int64_t dp_sent_values_ = 0;     // gradient values it sent, all steps
  fs::path last_ckpt_;
  int64_t last_ckpt_step_ = -1;  // a checkpoint of this very step needs no second save
};

}  // namespace mase::train
