// train/trainer.cpp — the training loop (see trainer.h for the step and the checkpoint; the
// checkpoint's trainer_state.json is read and written in trainer_state.cpp, and what Ctrl-C
// does is in stop.cpp).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <fstream>

#include "runtime/atomic_file.h"
#include "models/checkpoint.h"
#include "models/json_io.h"
#include "models/lora.h"
#include "models/safetensors.h"
#include "quant/checkpoint.h"
#include "quant/passes.h"
#include "runtime/allocator.h"
#include "runtime/parallel.h"
#include "runtime/gpu_math.h"
#include "runtime/random.h"
#include "train/clip_grad_norm.h"
#include "train/data_parallel.h"

namespace mase::train {

using nlohmann::json;

// ---- around the loop ----------------------------------------------------------------------

namespace {

// Batches of varying length (bucketing, dynamic padding) ask the caching allocator for new
// size classes step after step, and every freed block stays cached: memory held from the OS
// kept growing (bert-small: 7 GB after 50 steps, for a 2 GB peak). Between steps nearly
// nothing is in use, so when the cache holds more than twice the peak a step needs, hand it
// back; the next step refills it from the OS once.
void trim_allocator_cache(Device device) {
  const AllocatorStats s = allocator_stats(device);
  if (s.os_bytes > 2 * s.peak_in_use_bytes) empty_cache(device);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ---- the trainer ------------------------------------------------------------------------------

namespace {

data::BatchOptions train_batches(const TrainConfig& c, int32_t pad_id) {
  data::BatchOptions bo;
  bo.batch_size = c.batch_size;
  bo.max_len = c.max_len;
  bo.shuffle = true;
  bo.seed = c.seed;
  bo.bucket_batches = c.bucketing ? 100 : 0;  // windows of 100 batches (data/batch.h)
  bo.pad_multiple = c.pad_multiple;
  bo.pad_id = pad_id;
  return bo;
}

// The trainable parameters (frozen ones are left out of the optimizer altogether).
nn::NamedTensors trainable(const nn::Module& m) {
  nn::NamedTensors out;
  for (auto& [name, p] : m.named_parameters())
    if (p.requires_grad()) out.push_back({name, p});
  return out;
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, nn::BertForSequenceClassification& model,
                 const data::TokenizedSplit& train, const data::TokenizedSplit& test,
                 int32_t pad_id, const RunDir& run, std::FILE* out)
    : config_(config),
      model_(model),
      forward_(eager_forward(model)),
      test_(test),
      batches_(train, train_batches(config, pad_id)),
      run_(run),
      pad_id_(pad_id),
      device_(Device::parse(config.device)),
      progress_(out, ::isatty(::fileno(out)) != 0) {
  MASE_CHECK(batches_.num_batches() > 0, ConfigError,
             "[train] expected training reviews, got an empty training split");
  if (device_.is_cuda()) set_gpu_precision(config_.precision);  // runtime/gpu_math.h
  set_deterministic(config_.deterministic);
  const int64_t nb = batches_.num_batches();
  total_steps_ = train::total_steps(config_, nb);  // ConfigError for an unresolved recipe
  epochs_ = total_steps_ / nb + (total_steps_ % nb != 0);  // rounded up; no overflow at 2^63
  schedule_ = LrSchedule::parse(config_.schedule, warmup_steps(config_, total_steps_), total_steps_);
  nn::NamedTensors params = trainable(model_);
  MASE_CHECK(!params.empty(), ConfigError,
             "[train] every parameter is frozen (--freeze '", config_.freeze,
             "' matches them all): nothing to train");
  AdamWOptions ao;
  ao.lr = *config_.lr;
  ao.beta1 = config_.beta1;
  ao.beta2 = config_.beta2;
  ao.eps = config_.eps;
  ao.weight_decay = config_.weight_decay;
  optimizer_ = std::make_unique<AdamW>(params, ao);
  if (config_.cuda_graphs && device_.is_cuda())
    graph_step_ = std::make_unique<GraphStep>(model_, *optimizer_, device_, config_.clip);
  state_.data_seed = config_.seed;
  state_.generator_seed = default_generator().seed;
  state_.generator_offset = default_generator().offset;
}

void Trainer::set_forward(Forward f) {
  if (graph_step_) graph_step_->set_forward(f);  // --compile --cuda-graphs: captured plans
  forward_ = f ? std::move(f) : eager_forward(model_);
}

void Trainer::restore(const fs::path& ckpt) {
  const std::string state_file = (ckpt / RunDir::kState).string();
  TrainerState s = TrainerState::from_json(nn::parse_json_file(state_file, "resume"), state_file);
  MASE_CHECK(s.data_seed == config_.seed && s.epoch <= epochs_ &&
                 s.batch <= batches_.num_batches(),
             ConfigError, "[resume] ", ckpt.string(), " does not fit this run's config (epoch ",
             s.epoch, ", batch ", s.batch, " of ", batches_.num_batches(), ")");
  // The position must be one this schedule reaches: a step of 1e12 would "finish" untrained.
  const int64_t nb = batches_.num_batches();
  MASE_CHECK(s.step <= total_steps_ && s.step == s.epoch * nb + s.batch, ConfigError, "[resume] ",
             state_file, ": expected step = epoch x ", nb, " + batch <= ", total_steps_,
             " (this run's schedule), got step ", s.step, ", epoch ", s.epoch, ", batch ", s.batch,
             " (a corrupt or foreign trainer state)");
  model_.load_state_dict(nn::load_safetensors((ckpt / "model.safetensors").string()).tensors);
  optimizer_->load_state_dict(
      nn::load_safetensors((ckpt / "optimizer.safetensors").string()).tensors);
  check_world_size(ckpt, dp_ ? dp_->world() : 1);
  default_generator().seed = dp_ ? rank_seed(s.generator_seed, dp_->rank()) : s.generator_seed;
  default_generator().offset = s.generator_offset;
  state_ = s;
  if (root()) run_.truncate_after(s.step);
}

void Trainer::set_data_parallel(DataParallel* dp) {
  MASE_CHECK(!graph_step_ || dp->world() == 1, ConfigError,
             "[train] --cuda-graphs captures a one-process step; with ", dp->world(),
             " ranks the gradients are all-reduced between backward and AdamW (drop --cuda-graphs)");
  dp_ = dp;
  dp_params_.clear();
  for (const ParamGroup& g : optimizer_->param_groups())
    for (const auto& [name, p] : g.params) dp_params_.push_back(p);
  state_.world_size = dp->world();
  default_generator().seed = rank_seed(state_.generator_seed, dp->rank());
  dp->share(config_.batch_size);  // the batch must split evenly (ConfigError otherwise),
  int64_t reviews = 0;             // and so must the epoch's last, shorter one
  for (const auto& b : batches_.plan()) reviews += static_cast<int64_t>(b.size());
  check_epoch_splits(reviews, config_.batch_size, dp->world());
}

bool Trainer::root() const { return !dp_ || dp_->root(); }

bool Trainer::should_stop() const { return dp_ ? dp_stop_ : stop_requested(); }

double Trainer::wall() const { return wall_at_start_ + seconds_since(fit_start_); }

double Trainer::epoch_position() const {
  return static_cast<double>(state_.epoch) +
         static_cast<double>(state_.batch) / static_cast<double>(batches_.num_batches());
}

EvalResult Trainer::run_evaluation() {
  if (!root()) return state_.last_eval;  // rank 0 evaluates; the others go on to the next step
  EvalOptions eo;
  eo.batch_size = config_.eval_batch_size;
  eo.max_len = config_.max_len;
  eo.pad_multiple = config_.pad_multiple;
  eo.pad_id = pad_id_;
  eo.device = device_;
  eo.forward = forward_;
  EvalResult e = evaluate(model_, test_, eo);
  state_.eval_seconds += e.seconds;
  MetricsRow row;
  row.step = state_.step;
  row.epoch = epoch_position();
  row.train_loss = state_.epoch_loss_count > 0
                       ? state_.epoch_loss_sum / static_cast<double>(state_.epoch_loss_count)
                       : NAN;
  row.test_loss = e.loss;
  row.test_accuracy = e.accuracy;
  row.test_examples = e.examples;
  row.lr = optimizer_->lr();
  row.elapsed_s = wall();
  run_.append_metrics(row);
  char line[256];
  std::snprintf(line, sizeof line,
                "eval  step %lld  epoch %.2f  train_loss %.4f  test_loss %.4f  "
                "test_accuracy %.2f%%  (%lld reviews, %s)",
                static_cast<long long>(state_.step), row.epoch, unsigned_nan(row.train_loss),
                unsigned_nan(e.loss),
                100 * e.accuracy, static_cast<long long>(e.examples),
                format_duration(e.seconds).c_str());
  progress_.line(line);
  state_.epoch_loss_sum = 0;
  state_.epoch_loss_count = 0;
  state_.last_eval_step = state_.step;
  state_.last_eval = e;
  return e;
}

void Trainer::save_model(const fs::path& dir) {
  quant::apply_weight_masks(model_);                 // pruned weights exactly 0 on disk
  nn::save_pretrained(model_, dir.string());         // config.json + model.safetensors (models/)
  quant::save_sidecar(model_, dir.string());         // + compression.json: quant/'s layers
}

fs::path Trainer::save_checkpoint() {
  state_.generator_seed = default_generator().seed;
  state_.generator_offset = default_generator().offset;
  return run_.save_checkpoint(state_.step, [&](const fs::path& dir) {
    save_model(dir);
    nn::save_safetensors((dir / "optimizer.safetensors").string(), optimizer_->state_dict());
    json j = state_.to_json();
    j["config"] = config_.to_json();  // for the record (resume reads train_config.json)
    write_text_atomic((dir / RunDir::kState).string(), j.dump(2) + "\n");
  });
}

// ---- one step ---------------------------------------------------------------------------------

StepResult Trainer::train_step(const data::Batch& batch) {
  optimizer_->set_lr_factor(schedule_.factor(state_.step));  // this step's learning rate
  if (dp_) return data_parallel_step(batch);                 // mpirun: data_parallel.h
  if (graph_step_) return graph_step_->step(batch);          // --cuda-graphs: graph_step.h
  return train::train_step(model_, *optimizer_, batch, device_, config_.clip, clip_state_,
                           forward_);  // train_step.h
}

// One step of data parallelism (train/data_parallel.h): this rank's rows of the batch, the
// whole batch's loss, gradients averaged over the ranks before the clip. The host-checked path
// of train_step.h with the all-reduces in between (the GPU-resident path has no hook for them).
StepResult Trainer::data_parallel_step(const data::Batch& batch) {
  check_batch(model_, batch);
  data::Batch x = data::to_device(dp_->slice(batch), device_);
  Tensor loss = forward_(x).loss;  // eager, or a compiled plan (train/forward.h)
  StepResult s{.loss = loss.item(), .tokens = x.real_tokens};
  // the whole batch's loss and tokens; a stop asked of any rank stops them all
  std::vector<double> v{s.loss / dp_->world(), static_cast<double>(s.tokens),
                        stop_requested() ? 1.0 : 0.0};
  dp_->sum(v);
  s.loss = v[0];
  s.tokens = static_cast<int64_t>(v[1]);
  dp_stop_ = v[2] > 0;  // what every rank decides on (a signal may reach one rank a step late)
  if (!std::isfinite(s.loss)) return s;                      // diverged: weights untouched
  backward(loss);                                            // every parameter's .grad
  dp_->average_gradients(dp_params_);                        // the mean over the ranks
  dp_allreduce_s_ += dp_->last_seconds();
  dp_sent_values_ += dp_->last_sent_values();
  s.grad_norm = config_.clip > 0 ? clip_grad_norm(*optimizer_, config_.clip)
                                 : grad_norm(model_.parameters());
  if (!std::isfinite(s.grad_norm)) return s;                 // diverged: weights untouched
  optimizer_->set_gate(Tensor());                            // the host decided: no device gate
  optimizer_->step();                                        // AdamW
  optimizer_->zero_grad();                                   // ready for the next backward
  return s;
}

// --profile N: steps 4 .. N+3 of this process run under the step profiler (runtime/profiler.h;
// CUDA events on the GPU, the host clock on the CPU); after the last, the table goes to the
// screen and <run>/profile.md. Other steps are train_step as is.
StepResult Trainer::profiled_step(const data::Batch& batch) {
  constexpr int64_t kWarmup = 3;
  const int64_t k = state_.step - fit_.step;  // steps this process has taken
  if (config_.profile <= 0 || k < kWarmup || profiled_ >= config_.profile) return train_step(batch);
  if (!profiler_) {
    profiler_ = std::make_unique<profile::Profiler>(device_.is_cuda() ? profile::gpu_timeline()
                                                                      : profile::host_timeline());
    profile_ = std::make_unique<profile::ProfileSummary>();
    profile_->device = device_.is_cuda() ? "GPU" : "CPU";
    profile_->title = cat(config_.model_name(), " on ", config_.device, ", ", config_.precision,
                          config_.cuda_graphs ? ", CUDA graphs" : "", ", batch ",
                          config_.batch_size, ", max_len ", config_.max_len, " (real batches)");
  }
  const AllocatorStats a0 = allocator_stats(device_);
  profiler_->begin_step();
  const StepResult s = train_step(batch);
  profile_->add(profiler_->end_step());
  profile_->os_allocs += allocator_stats(device_).os_allocs - a0.os_allocs;
  if (graph_step_) profile_->launches = graph_step_->stats().kernels;
  if (++profiled_ == config_.profile) {
    const std::string table = profile_->table();
    write_text_atomic((run_.path() / "profile.md").string(), table);
    progress_.line(table);
    profiler_.reset();
  }
  return s;
}

// ---- the loop ---------------------------------------------------------------------------------

TrainResult Trainer::fit() {
  // every rank starts from the same weights (same seed, --init or checkpoint), or none does
  if (dp_) dp_->check_same_values("weights at the start", dp_params_);
  fit_start_ = std::chrono::steady_clock::now();
  wall_at_start_ = state_.wall_seconds;
  fit_ = FitCounters{state_.train_seconds, state_.step, state_.train_tokens};
  const int64_t nb = batches_.num_batches();
  model_.train();
  for (; state_.epoch < epochs_ && state_.step < total_steps_; ++state_.epoch, state_.batch = 0) {
    batches_.set_epoch(state_.epoch);
    while (state_.batch < nb && state_.step < total_steps_) {
      const auto t0 = std::chrono::steady_clock::now();
      const StepResult s = profiled_step(batches_.batch(state_.batch));
      if (!std::isfinite(s.loss)) return diverged("the loss", s.loss);
      if (!std::isfinite(s.grad_norm)) return diverged("the gradient norm", s.grad_norm);
      trim_allocator_cache(device_);
      count_step(s, seconds_since(t0));
      log_step(s);
      if (on_step) on_step(state_.step, s.loss);
      after_step();  // evaluation and checkpoint on their schedules
      // (a stop at the very last step just lets the run finish)
      if (should_stop() && state_.step < total_steps_) return interrupted();
    }
    if (state_.batch < nb) break;  // max_steps reached inside the epoch: no epoch end
    end_epoch();
    if (should_stop() && state_.step < total_steps_) {
      ++state_.epoch;
      state_.batch = 0;
      return interrupted();
    }
  }
  if (state_.last_eval_step != state_.step) run_evaluation();
  if (graph_step_) {  // --cuda-graphs: what was captured and replayed
    const GraphStepStats& g = graph_step_->stats();
    progress_.line(cat("cuda graphs: ", g.captures, " captured (", format_duration(g.capture_ms / 1e3),
                       ", ", g.kernels, " kernels each), ", g.replays, " replays, ", g.eager,
                       " steps uncaptured",
                       g.capture_error.empty() ? "" : cat("; a capture failed: ", g.capture_error)));
  }
  TrainResult done = finish(TrainStatus::completed, "");
  // --fuse-lora: the adapters fold into plain Linears (W + alpha/r·B·A) for the saved model;
  // the evaluation above is the unfused model's (equal up to float rounding)
  if (config_.fuse_lora) {
    std::string report = nn::fuse_lora(model_).str();
    report.pop_back();  // Progress::line adds the newline
    progress_.line(report);
  }
  if (root()) {
    save_model(run_.path());
    write_final(done);
  }
  return done;
}

// ---- around the step: counters, logging, schedules, endings ------------------------------------

void Trainer::count_step(const StepResult& s, double seconds) {
  ++state_.step;
  ++state_.batch;
  state_.train_tokens += s.tokens;
  state_.train_seconds += seconds;
  state_.log_loss_sum += s.loss;
  ++state_.log_loss_count;
  state_.epoch_loss_sum += s.loss;
  ++state_.epoch_loss_count;
  losses_.push_back(s.loss);
}

void Trainer::log_step(const StepResult& s) {
  if (!root()) return;  // rank 0 prints and logs
  const bool log = state_.step % config_.log_every == 0 || state_.step == total_steps_;
  StepInfo info;
  info.step = state_.step;
  info.total_steps = total_steps_;
  info.epoch = state_.epoch + 1;
  info.epochs = epochs_;
  info.loss = state_.log_loss_sum / static_cast<double>(state_.log_loss_count);
  info.lr = optimizer_->lr();
  info.grad_norm = s.grad_norm;
  const double secs = state_.train_seconds - fit_.train_seconds;
  info.tokens_per_s = secs > 0 ? static_cast<double>(state_.train_tokens - fit_.tokens) / secs : 0;
  info.elapsed_s = wall();
  info.eta_s = secs / static_cast<double>(state_.step - fit_.step) *
               static_cast<double>(total_steps_ - state_.step);
  progress_.step(info, log);
  if (!log) return;
  run_.append_log(nlohmann::ordered_json{{"step", state_.step},
                                         {"epoch", epoch_position()},
                                         {"loss", info.loss},
                                         {"lr", info.lr},
                                         {"grad_norm", s.grad_norm},
                                         {"tokens_per_s", info.tokens_per_s},
                                         {"elapsed_s", info.elapsed_s}});
  state_.log_loss_sum = 0;
  state_.log_loss_count = 0;
}

void Trainer::after_step() {
  const bool epoch_end = state_.batch == batches_.num_batches();  // end_epoch() does both
  if (config_.eval_every > 0 && state_.step % config_.eval_every == 0 && !epoch_end) {
    const EvalResult e = run_evaluation();
    if (on_eval && state_.step < total_steps_) on_eval(state_.step, e);
  }
  if (config_.ckpt_every > 0 && state_.step % config_.ckpt_every == 0 && !epoch_end &&
      state_.step < total_steps_)
    checkpoint();
}

void Trainer::end_epoch() {
  if (state_.last_eval_step != state_.step) {
    const EvalResult e = run_evaluation();
    if (on_eval && state_.step < total_steps_) on_eval(state_.step, e);
  }
  if (state_.step >= total_steps_) return;  // the final model is saved instead
  // a checkpoint that starts the next epoch: its saved position is (epoch + 1, batch 0)
  const int64_t epoch = state_.epoch, batch = state_.batch;
  state_.epoch += 1;
  state_.batch = 0;
  checkpoint();
  state_.epoch = epoch;
  state_.batch = batch;
}

void Trainer::checkpoint() {
  if (!root()) return;  // rank 0 writes the checkpoints
  state_.wall_seconds = wall();
  last_ckpt_ = save_checkpoint();
  last_ckpt_step_ = state_.step;
  progress_.line(cat("checkpoint ", last_ckpt_.string()));
}

TrainResult Trainer::finish(TrainStatus status, std::string message) {
  state_.wall_seconds = wall();
  TrainResult r;
  r.status = status;
  r.step = state_.step;
  r.eval = state_.last_eval;
  r.losses = losses_;
  r.wall_s = state_.wall_seconds;
  r.train_tokens_per_s = state_.train_seconds > 0
                             ? static_cast<double>(state_.train_tokens) / state_.train_seconds
                             : 0;
  r.message = std::move(message);
  r.checkpoint = last_ckpt_.empty() ? run_.latest_checkpoint().value_or(fs::path()) : last_ckpt_;
  progress_.finish();
  return r;
}

TrainResult Trainer::interrupted() {
  if (last_ckpt_step_ != state_.step && root()) {
    state_.wall_seconds = wall();
    last_ckpt_ = save_checkpoint();
  }
  return finish(TrainStatus::interrupted,
                cat("[train] stopped at step ", state_.step, " of ", total_steps_,
                    "; checkpoint saved in ", last_ckpt_.string(),
                    "; continue with: ",
                    dp_ && dp_->world() > 1 ? cat("mpirun -np ", dp_->world(), " ") : "",
                    "mase-train --resume ", run_.path().string()));
}

TrainResult Trainer::diverged(const char* what, double value) {
  // Step N's loss is computed with the weights step N − 1 left: a checkpoint of step N − 1
  // holds the very weights that gave the non-finite value (and older ones are not kept).
  const auto last = run_.latest_checkpoint();
  const bool good = last && checkpoint_step(*last) < state_.step;
  const std::string value_text = std::isnan(value) ? std::string("nan") : cat(value);
  return finish(TrainStatus::diverged,
                cat("[train] ", what, " is ", value_text, " at step ", state_.step + 1,
                    " (epoch ", state_.epoch + 1, "): stopped (lower --lr, now ", *config_.lr,
                    ", or check the data); ",
                    good   ? cat("the last good checkpoint is ", last->string(),
                                 " (a model folder: --init it with a lower --lr)")
                    : last ? cat("the latest checkpoint, ", last->string(), ", holds the weights "
                                 "that gave it: start again with a lower --lr")
                           : std::string("no checkpoint was written before it")));
}

void Trainer::write_final(const TrainResult& r) {
  nlohmann::ordered_json j;  // in this order in the file: the results first
  j["status"] = "completed";
  j["test_accuracy"] = r.eval.accuracy;
  j["test_loss"] = r.eval.loss;
  j["test_examples"] = r.eval.examples;
  j["train_tokens_per_s"] = r.train_tokens_per_s;
  j["wall_s"] = r.wall_s;
  j["train_s"] = state_.train_seconds;
  j["eval_s"] = state_.eval_seconds;
  j["steps"] = state_.step;
  j["epochs"] = epoch_position();
  j["train_tokens"] = state_.train_tokens;
  int64_t train_examples = 0;  // every epoch's plan holds each training review once
  for (const auto& b : batches_.plan()) train_examples += static_cast<int64_t>(b.size());
  j["train_examples"] = train_examples;
  j["parameters"] = model_.num_parameters();
  j["trainable_parameters"] = model_.num_parameters(/*trainable_only=*/true);
  j["threads"] = num_threads();
  if (dp_) {  // data parallel: ranks, rank 0's seconds in the gradient all-reduce and the
              // gradient bytes it sent (fp32; fewer than the parameters' where rows are sparse)
    j["ranks"] = dp_->world();
    j["allreduce_s"] = dp_allreduce_s_;
    j["allreduce_bytes"] = dp_sent_values_ * int64_t(sizeof(float));
  }
  // memory held from the OS at the peak (the caching allocator's view: runtime/allocator.h)
  j["peak_memory_bytes"] = allocator_stats(device_).peak_os_bytes;
  j["config"] = config_.to_json();
  j["model_config"] = model_.config().to_json();
  // quantized / pruned / MXINT8 layers: formats and achieved sparsity per layer (or null)
  j["compression"] = quant::compression_summary(model_);
  write_text_atomic(run_.file(RunDir::kFinal).string(), j.dump(2) + "\n");
}

}  // namespace mase::train
