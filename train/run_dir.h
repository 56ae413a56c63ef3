// train/run_dir.h — the run folder: everything one training run leaves on disk.
//
//   <run>/train_config.json     the full TrainConfig, recipe resolved (written first)
//   <run>/vocab.txt | tokenizer.model   the tokenizer the ids came from
//   <run>/train_log.jsonl       one JSON object per logged step: step, epoch, loss, lr, ...
//   <run>/metrics.csv           one row per evaluation on the test split
//   <run>/checkpoints/step-000500/   the latest checkpoint (model.safetensors, config.json,
//                                    optimizer.safetensors, trainer_state.json)
//   <run>/config.json, model.safetensors   the final model, in HF's layout (when finished)
//   <run>/final.json            the result: test_accuracy, test_loss, speed, wall time, config
// So a finished run folder is also a model folder: from_pretrained(<run>), --init <run> and
// `mase-train predict <run> "text"` read it.
//
// Nothing is ever half-written. Files go through runtime/atomic_file.h; a checkpoint is written
// into checkpoints/.tmp-step-N-<pid>/ and renamed to step-N only when complete, and older
// checkpoints are deleted only after that. So a crash, Ctrl-C or a full disk at any moment
// leaves the previous checkpoint intact, and resume never sees a partial one.
//
// Read next: train/trainer.h (what goes into a checkpoint and when).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace mase::train {

namespace fs = std::filesystem;

// One evaluation: a row of metrics.csv.
struct MetricsRow {
  int64_t step = 0;
  double epoch = 0;       // fractional: 1.5 = halfway through the second epoch
  double train_loss = 0;  // mean training loss since the previous evaluation
  double test_loss = 0, test_accuracy = 0;
  int64_t test_examples = 0;
  double lr = 0, elapsed_s = 0;
};

class RunDir {
 public:
  // A new run folder. `path` must not exist, or be an empty folder; anything else is a
  // ConfigError ("… is not empty: pass another --out, or --resume it") and nothing is touched.
  static RunDir create(const fs::path& path);
  // An existing run folder, to resume: it must hold train_config.json and a checkpoint, and
  // must not be finished (final.json). ConfigError saying what is missing otherwise.
  static RunDir open(const fs::path& path);
  // The run folder as another process writes it (rank 0 of a data-parallel run, for the
  // other ranks, which never write): nothing checked, nothing written.
  static RunDir of_other_rank(const fs::path& path) { return RunDir(path); }

  const fs::path& path() const { return path_; }
  fs::path file(const std::string& name) const { return path_ / name; }

  // Appends one line (flushed at once: the log survives a crash up to the last step).
  void append_log(const nlohmann::ordered_json& line) const;
  void append_metrics(const MetricsRow& row) const;
  // Resuming from step `step`: drops the log lines and metrics rows of later steps (written
  // after that checkpoint by the run that crashed), so the files read as one run.
  void truncate_after(int64_t step) const;

  // Writes a checkpoint: `write(dir)` fills a fresh temporary folder, which is then renamed to
  // checkpoints/step-<step> (replacing one of the same step); older ones are deleted.
  fs::path save_checkpoint(int64_t step, const std::function<void(const fs::path&)>& write) const;
  // The newest complete checkpoint folder, if any.
  std::optional<fs::path> latest_checkpoint() const;

  static constexpr const char* kConfig = "train_config.json";
  static constexpr const char* kLog = "train_log.jsonl";
  static constexpr const char* kMetrics = "metrics.csv";
  static constexpr const char* kFinal = "final.json";
  static constexpr const char* kState = "trainer_state.json";  // inside a checkpoint

 private:
  explicit RunDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

// "step-000500" -> 500; -1 for any other name (temporaries, stray files).
int64_t checkpoint_step(const fs::path& checkpoint);

// The header line of metrics.csv.
extern const char* const kMetricsHeader;

// The tokenizer file in a model or run folder: vocab.txt (WordPiece) or tokenizer.model
// (sentencepiece); empty if neither is there. A checkpoint of a run (<run>/checkpoints/step-N,
// which holds no tokenizer) uses its run's.
fs::path find_tokenizer_file(const fs::path& dir);
// The tokenizer kind of a tokenizer file, by load_tokenizer's rule: a .model file is
// sentencepiece, anything else (vocab.txt) WordPiece.
std::string tokenizer_kind(const fs::path& file);
// The name a tokenizer is saved under in a run folder: "vocab.txt" or "tokenizer.model".
std::string tokenizer_file_name(const std::string& tokenizer_kind);

// "runs/bert-small-imdb-20250101-120000": the default --out, from the local time.
std::string default_run_name(const std::string& model, const std::string& data);

}  // namespace mase::train
