// train/trainer.cpp — the training loop (see trainer.h for the step and the checkpoint).
#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
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

namespace mase::train {

using nlohmann::json;

// ---- stopping -------------------------------------------------------------------------------

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop must be signal-safe");

// The first SIGINT or SIGTERM asks for a clean stop; a second one of either kind exits at once
// (128 + signal, as a shell reports it), even where the process is stuck outside the training
// loop (a library's thread shutdown at exit). Only async-signal-safe calls: write(2), _exit(2).
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    const char quit[] = "\n[train] second signal: quitting at once (no checkpoint)\n";
    ssize_t ignored = ::write(STDERR_FILENO, quit, sizeof quit - 1);
    (void)ignored;
    ::_exit(128 + sig);
  }
  const char msg[] = "\n[train] stopping after this step: saving a checkpoint "
                     "(press Ctrl-C again to quit at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}
}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }
void clear_stop() { g_stop.store(false); }
void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

// ---- trainer state as JSON ------------------------------------------------------------------

namespace {

json eval_json(const EvalResult& e) {
  return {{"loss", e.loss},         {"accuracy", e.accuracy}, {"examples", e.examples},
          {"tokens", e.tokens},     {"seconds", e.seconds}};
}

EvalResult eval_from(const json& j) {
  EvalResult e;
  e.loss = j.at("loss").get<double>();
  e.accuracy = j.at("accuracy").get<double>();
  e.examples = j.at("examples").get<int64_t>();
  e.tokens = j.at("tokens").get<int64_t>();
  e.seconds = j.at("seconds").get<double>();
  return e;
}

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

json TrainerState::to_json() const {
  return {{"step", step},
          {"epoch", epoch},
          {"batch", batch},
          {"generator_seed", generator_seed},
          {"generator_offset", generator_offset},
          {"data_seed", data_seed},
          {"train_tokens", train_tokens},
          {"train_seconds", train_seconds},
          {"eval_seconds", eval_seconds},
          {"wall_seconds", wall_seconds},
          {"log_loss_sum", log_loss_sum},
          {"log_loss_count", log_loss_count},
          {"epoch_loss_sum", epoch_loss_sum},
          {"epoch_loss_count", epoch_loss_count},
          {"last_eval_step", last_eval_step},
          {"last_eval", eval_json(last_eval)}};
}

TrainerState TrainerState::from_json(const json& j, const std::string& source) {
  try {
    TrainerState s;
    s.step = j.at("step").get<int64_t>();
    s.epoch = j.at("epoch").get<int64_t>();
    s.batch = j.at("batch").get<int64_t>();
    s.generator_seed = j.at("generator_seed").get<uint64_t>();
    s.generator_offset = j.at("generator_offset").get<uint64_t>();
    s.data_seed = j.at("data_seed").get<uint64_t>();
    s.train_tokens = j.at("train_tokens").get<int64_t>();
    s.train_seconds = j.at("train_seconds").get<double>();
    s.eval_seconds = j.at("eval_seconds").get<double>();
    s.wall_seconds = j.at("wall_seconds").get<double>();
    s.log_loss_sum = j.at("log_loss_sum").get<double>();
    s.log_loss_count = j.at("log_loss_count").get<int64_t>();
    s.epoch_loss_sum = j.at("epoch_loss_sum").get<double>();
    s.epoch_loss_count = j.at("epoch_loss_count").get<int64_t>();
    s.last_eval_step = j.at("last_eval_step").get<int64_t>();
    s.last_eval = eval_from(j.at("last_eval"));
    MASE_CHECK(s.step >= 0 && s.epoch >= 0 && s.batch >= 0, IoError, "[resume] ", source,
               ": expected step, epoch and batch >= 0, got step ", s.step, ", epoch ", s.epoch,
               ", batch ", s.batch, " (a corrupt trainer state)");
    return s;
  } catch (const json::exception& e) {
    throw IoError(cat("[resume] ", source, " is not a trainer state (", e.what(), ")"));
  }
}

// ---- the trainer ------------------------------------------------------------------------------

namespace {

data::BatchOptions train_batches(const TrainConfig& c, int32_t pad_id) {
  data::BatchOptions bo;
  bo.batch_size = c.batch_size;
  bo.max_len = c.max_len;
  bo.shuffle = true;
  bo.seed = c.seed;
  bo.bucket_batches = c.bucketing ? 100 : 0;  // windows of 100 batches (data/batch.h)
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
      test_(test),
      batches_(train, train_batches(config, pad_id)),
      run_(run),
      pad_id_(pad_id),
      device_(Device::parse(config.device)),
      progress_(out, ::isatty(::fileno(out)) != 0) {
  MASE_CHECK(config_.lr.has_value() && config_.warmup.has_value(), ConfigError,
             "[train] the config's recipe is not resolved (call resolve_recipe)");
  MASE_CHECK(batches_.num_batches() > 0, ConfigError,
             "[train] expected training reviews, got an empty training split");
  if (device_.is_cuda()) set_gpu_gemm_precision(config_.precision);  // runtime/gpu_math.h
  set_deterministic(config_.deterministic);
  const int64_t nb = batches_.num_batches();
  total_steps_ = config_.max_steps > 0 ? config_.max_steps : *config_.epochs * nb;
  epochs_ = (total_steps_ + nb - 1) / nb;
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
  default_generator().seed = s.generator_seed;
  default_generator().offset = s.generator_offset;
  state_ = s;
  run_.truncate_after(s.step);
}

double Trainer::wall() const { return wall_at_start_ + seconds_since(fit_start_); }

double Trainer::epoch_position() const {
  return static_cast<double>(state_.epoch) +
         static_cast<double>(state_.batch) / static_cast<double>(batches_.num_batches());
}

EvalResult Trainer::run_evaluation() {
  EvalOptions eo;
  eo.batch_size = config_.eval_batch_size;
  eo.max_len = config_.max_len;
  eo.pad_id = pad_id_;
  eo.device = device_;
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
                static_cast<long long>(state_.step), row.epoch, row.train_loss, e.loss,
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
  if (graph_step_) return graph_step_->step(batch);          // --cuda-graphs: graph_step.h
  return train::train_step(model_, *optimizer_, batch, device_, config_.clip, clip_state_);  // train_step.h
}

// ---- the loop ---------------------------------------------------------------------------------

TrainResult Trainer::fit() {
  fit_start_ = std::chrono::steady_clock::now();
  wall_at_start_ = state_.wall_seconds;
  fit_ = FitCounters{state_.train_seconds, state_.step, state_.train_tokens};
  const int64_t nb = batches_.num_batches();
  model_.train();
  for (; state_.epoch < epochs_ && state_.step < total_steps_; ++state_.epoch, state_.batch = 0) {
    batches_.set_epoch(state_.epoch);
    while (state_.batch < nb && state_.step < total_steps_) {
      const auto t0 = std::chrono::steady_clock::now();
      const StepResult s = train_step(batches_.batch(state_.batch));
      if (!std::isfinite(s.loss)) return diverged("the loss", s.loss);
      if (!std::isfinite(s.grad_norm)) return diverged("the gradient norm", s.grad_norm);
      trim_allocator_cache(device_);
      count_step(s, seconds_since(t0));
      log_step(s);
      if (on_step) on_step(state_.step, s.loss);
      after_step();  // evaluation and checkpoint on their schedules
      // (a stop at the very last step just lets the run finish)
      if (stop_requested() && state_.step < total_steps_) return interrupted();
    }
    if (state_.batch < nb) break;  // max_steps reached inside the epoch: no epoch end
    end_epoch();
    if (stop_requested() && state_.step < total_steps_) {
      ++state_.epoch;
      state_.batch = 0;
      return interrupted();
    }
  }
  if (state_.last_eval_step != state_.step) run_evaluation();
  TrainResult done = finish(TrainStatus::completed, "");
  // --fuse-lora: the adapters fold into plain Linears (W + alpha/r·B·A) for the saved model;
  // the evaluation above is the unfused model's (equal up to float rounding)
  if (config_.fuse_lora) {
    std::string report = nn::fuse_lora(model_).str();
    report.pop_back();  // Progress::line adds the newline
    progress_.line(report);
  }
  save_model(run_.path());
  write_final(done);
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
  if (config_.eval_every > 0 && state_.step % config_.eval_every == 0 && !epoch_end)
    run_evaluation();
  if (config_.ckpt_every > 0 && state_.step % config_.ckpt_every == 0 && !epoch_end &&
      state_.step < total_steps_)
    checkpoint();
}

void Trainer::end_epoch() {
  if (state_.last_eval_step != state_.step) run_evaluation();
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
  if (last_ckpt_step_ != state_.step) {
    state_.wall_seconds = wall();
    last_ckpt_ = save_checkpoint();
  }
  return finish(TrainStatus::interrupted,
                cat("[train] stopped at step ", state_.step, " of ", total_steps_,
                    "; checkpoint saved in ", last_ckpt_.string(),
                    "; continue with: mase-train --resume ", run_.path().string()));
}

TrainResult Trainer::diverged(const char* what, double value) {
  const auto good = run_.latest_checkpoint();
  return finish(TrainStatus::diverged,
                cat("[train] ", what, " is ", value, " at step ", state_.step + 1, " (epoch ",
                    state_.epoch + 1, "): stopped (lower --lr, now ", *config_.lr,
                    ", or check the data); ",
                    good ? cat("the last good checkpoint is ", good->string(),
                               " (a model folder: --init it with a lower --lr)")
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
  // memory held from the OS at the peak (the caching allocator's view: runtime/allocator.h)
  j["peak_memory_bytes"] = allocator_stats(device_).peak_os_bytes;
  j["config"] = config_.to_json();
  j["model_config"] = model_.config().to_json();
  // quantized / pruned / MXINT8 layers: formats and achieved sparsity per layer (or null)
  j["compression"] = quant::compression_summary(model_);
  write_text_atomic(run_.file(RunDir::kFinal).string(), j.dump(2) + "\n");
}

}  // namespace mase::train
