// train/trainer_state.cpp — a checkpoint's trainer_state.json: TrainerState to and from JSON
// (what it holds: train/trainer.h), and the world-size check of --resume.
#include "models/json_io.h"
#include "runtime/error.h"
#include "train/trainer.h"

namespace mase::train {

using nlohmann::json;

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
          {"last_eval", eval_json(last_eval)},
          {"world_size", world_size}};
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
    s.world_size = j.value("world_size", int64_t{1});  // (absent before data parallelism)
    MASE_CHECK(s.step >= 0 && s.epoch >= 0 && s.batch >= 0, IoError, "[resume] ", source,
               ": expected step, epoch and batch >= 0, got step ", s.step, ", epoch ", s.epoch,
               ", batch ", s.batch, " (a corrupt trainer state)");
    return s;
  } catch (const json::exception& e) {
    throw IoError(cat("[resume] ", source, " is not a trainer state (", e.what(), ")"));
  }
}

void check_world_size(const fs::path& ckpt, int64_t world) {
  const std::string state_file = (ckpt / RunDir::kState).string();
  const TrainerState s =
      TrainerState::from_json(nn::parse_json_file(state_file, "resume"), state_file);
  MASE_CHECK(s.world_size == world, ConfigError, "[resume] ", ckpt.string(), " was written by a ",
             "run of ", s.world_size, " rank(s), expected ", world, " (resume with mpirun -np ",
             s.world_size, ": each rank's share of the batch and its dropout stream depend on it)");
}

}  // namespace mase::train
