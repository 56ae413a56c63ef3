// train/run_dir.cpp — the run folder (see run_dir.h).
#include "train/run_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>

#include "models/json_io.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace mase::train {

const char* const kMetricsHeader =
    "step,epoch,train_loss,test_loss,test_accuracy,test_examples,lr,elapsed_s";

int64_t checkpoint_step(const fs::path& p) {
  static const std::regex re("step-([0-9]+)");
  std::smatch m;
  const std::string name = p.filename().string();
  if (!std::regex_match(name, m, re) || m[1].length() > 15) return -1;
  return std::stoll(m[1]);
}

namespace {

// The step of a whole metrics.csv row (8 comma-separated fields, the first an integer);
// nullopt for a torn or foreign row.
std::optional<int64_t> metrics_row_step(const std::string& line) {
  if (std::count(line.begin(), line.end(), ',') != 7) return std::nullopt;
  const size_t comma = line.find(',');
  if (comma == 0 || comma > 15 || line.find_first_not_of("0123456789") != comma) return std::nullopt;
  return std::stoll(line.substr(0, comma));
}

// A kill between the two renames of a re-saved step (step-N moved aside to .tmp-old-step-N-pid,
// the new one not yet renamed in) leaves no step-N: move the old one back before temporaries
// are deleted, so the step is never lost.
void restore_moved_aside(const fs::path& ckpt_dir) {
  static const std::regex re(R"(\.tmp-old-(step-[0-9]+)-[0-9]+)");
  std::error_code ec;
  if (!fs::is_directory(ckpt_dir, ec)) return;
  std::vector<fs::path> moved;
  for (const auto& e : fs::directory_iterator(ckpt_dir, ec)) moved.push_back(e.path());
  for (const fs::path& p : moved) {
    std::smatch m;
    const std::string name = p.filename().string();
    if (std::regex_match(name, m, re) && !fs::exists(ckpt_dir / m[1].str(), ec))
      fs::rename(p, ckpt_dir / m[1].str(), ec);
  }
}

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06lld", static_cast<long long>(step));
  return buf;
}

void append_line(const fs::path& p, const std::string& line) {
  std::ofstream out(p, std::ios::app);
  out << line << '\n';
  out.flush();
  MASE_CHECK(out.good(), IoError, "[run] cannot append to ", p.string(), " (disk full?)");
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Leftovers of a crash in the middle of a checkpoint save: never complete, safe to delete.
void remove_temporaries(const fs::path& ckpt_dir) {
  std::error_code ec;
  if (!fs::is_directory(ckpt_dir, ec)) return;
  for (const auto& e : fs::directory_iterator(ckpt_dir, ec)) {
    if (e.path().filename().string().starts_with(".tmp-")) fs::remove_all(e.path(), ec);
  }
}

}  // namespace

RunDir RunDir::create(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    MASE_CHECK(fs::is_directory(path, ec), ConfigError, "[run] --out ", path.string(),
               " exists and is not a folder (pass another --out)");
    MASE_CHECK(fs::is_empty(path, ec), ConfigError, "[run] --out ", path.string(),
               " is not empty (pass another --out, or continue that run with --resume ",
               path.string(), ")");
  }
  fs::create_directories(path / "checkpoints", ec);
  MASE_CHECK(!ec, IoError, "[run] cannot create ", path.string(), ": ", ec.message());
  RunDir run(path);
  write_text_atomic(run.file(kMetrics).string(), std::string(kMetricsHeader) + "\n");
  return run;
}

RunDir RunDir::open(const fs::path& path) {
  MASE_CHECK(fs::is_directory(path), ConfigError, "[resume] expected a run folder, got ",
             path.string(), fs::exists(path) ? " (a file)" : " (no such folder)");
  MASE_CHECK(fs::is_regular_file(path / kConfig), ConfigError, "[resume] expected a run folder ",
             "written by mase-train, got ", path.string(), " (it has no ", kConfig, ")");
  MASE_CHECK(!fs::exists(path / kFinal), ConfigError, "[resume] ", path.string(),
             " is a finished run (it has ", kFinal, "); start a new one with --init ",
             path.string(), " to train it further");
  RunDir run(path);
  restore_moved_aside(path / "checkpoints");
  remove_temporaries(path / "checkpoints");
  MASE_CHECK(run.latest_checkpoint().has_value(), ConfigError, "[resume] ", path.string(),
             " has no checkpoint yet (it stopped before its first one): start it again with "
             "another --out, or delete ", path.string(), " and reuse the name (it holds only ",
             "its config and logs)");
  return run;
}

void RunDir::append_log(const nlohmann::ordered_json& line) const { append_line(file(kLog), line.dump()); }

void RunDir::append_metrics(const MetricsRow& r) const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld,%.4f,%.6f,%.6f,%.6f,%lld,%.6g,%.1f",
                static_cast<long long>(r.step), r.epoch, r.train_loss, r.test_loss,
                r.test_accuracy, static_cast<long long>(r.test_examples), r.lr, r.elapsed_s);
  append_line(file(kMetrics), buf);
}

void RunDir::truncate_after(int64_t step) const {
  // train_log.jsonl: keep lines whose "step" <= step
  if (fs::exists(file(kLog))) {
    std::istringstream in(read_text(file(kLog)));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      // a line that is not a whole JSON object with a step (the half-written last line of a
      // killed run) is dropped with the lines after the checkpoint
      if (nn::json_depth(line) > nn::kMaxJsonDepth) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
          j["step"].get<int64_t>() > step) {
        continue;
      }
      kept += line + "\n";
    }
    write_text_atomic(file(kLog).string(), kept);
  }
  // metrics.csv: keep the header and rows whose first column <= step
  if (fs::exists(file(kMetrics))) {
    std::istringstream in(read_text(file(kMetrics)));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const std::optional<int64_t> row_step = metrics_row_step(line);  // nullopt: a torn row
      if (line != kMetricsHeader && (!row_step || *row_step > step)) continue;
      kept += line + "\n";
    }
    write_text_atomic(file(kMetrics).string(), kept);
  }
}

fs::path RunDir::save_checkpoint(int64_t step,
                                 const std::function<void(const fs::path&)>& write) const {
  const fs::path dir = path_ / "checkpoints";
  const std::string pid = std::to_string(::getpid());
  const fs::path tmp = dir / (".tmp-" + step_name(step) + "-" + pid);
  const fs::path final_path = dir / step_name(step);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  MASE_CHECK(!ec, IoError, "[checkpoint] cannot create ", tmp.string(), ": ", ec.message());
  try {
    write(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);  // a failed save leaves the previous checkpoint as it was
    throw;
  }
  // The same step saved twice (an interrupted run saved it, the resumed one saves it again
  // at the end of the epoch): move the old one aside first, as rename cannot replace a folder.
  if (fs::exists(final_path)) {
    const fs::path old = dir / (".tmp-old-" + step_name(step) + "-" + pid);
    fs::rename(final_path, old, ec);
    MASE_CHECK(!ec, IoError, "[checkpoint] cannot move ", final_path.string(), ": ", ec.message());
  }
  fs::rename(tmp, final_path, ec);
  MASE_CHECK(!ec, IoError, "[checkpoint] cannot rename ", tmp.string(), " to ",
             final_path.string(), ": ", ec.message());
  // Only now that the new one is complete: delete the older ones (and the moved-aside one).
  for (const auto& e : fs::directory_iterator(dir)) {
    const int64_t s = checkpoint_step(e.path());
    const bool old_tmp = e.path().filename().string().starts_with(".tmp-old-");
    if ((s >= 0 && s != step) || old_tmp) fs::remove_all(e.path(), ec);
  }
  return final_path;
}

std::optional<fs::path> RunDir::latest_checkpoint() const {
  std::optional<fs::path> best;
  int64_t best_step = -1;
  std::error_code ec;
  if (!fs::is_directory(path_ / "checkpoints", ec)) return best;
  for (const auto& e : fs::directory_iterator(path_ / "checkpoints", ec)) {
    const int64_t s = checkpoint_step(e.path());
    if (s > best_step && fs::is_regular_file(e.path() / kState)) {
      best_step = s;
      best = e.path();
    }
  }
  return best;
}

fs::path find_tokenizer_file(const fs::path& dir) {
  for (const char* name : {"vocab.txt", "tokenizer.model"}) {
    if (fs::is_regular_file(dir / name)) return dir / name;
  }
  // <run>/checkpoints/step-N: the run's tokenizer (what the divergence message's --init needs)
  fs::path p = fs::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "step-N/"
  const fs::path run = p.parent_path().parent_path();
  if (p.parent_path().filename() == "checkpoints" && fs::is_regular_file(run / RunDir::kConfig))
    return find_tokenizer_file(run);
  return {};
}

std::string tokenizer_kind(const fs::path& file) {
  return file.extension() == ".model" ? "sentencepiece" : "wordpiece";
}

std::string tokenizer_file_name(const std::string& kind) {
  return kind == "wordpiece" ? "vocab.txt" : "tokenizer.model";
}

std::string default_run_name(const std::string& model, const std::string& data) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return "runs/" + model + "-" + data + "-" + buf;
}

}  // namespace mase::train
