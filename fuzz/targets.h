// fuzz/targets.h — the entry points fed hostile bytes: by the libFuzzer targets (fuzz/fuzz_*.cpp,
// built with clang's -fsanitize=fuzzer: scripts/fuzz.sh) and by the hostile-corpus test
// (tests/hostile/, every file of fuzz/corpus/ -> its expected error, in the normal ctest run).
//
// Each entry reads the bytes the way a user's file would be read and returns the error line
// (mase::Error's message) or "" when the input was accepted. Anything else — another exception
// type, a signal, a sanitizer report — is a bug: libFuzzer reports an escaping exception as a
// crash, and the corpus test fails on it.
#pragma once
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "data/sentencepiece_tokenizer.h"
#include "data/token_cache.h"
#include "data/tokenizer.h"
#include "data/wordpiece.h"
#include "models/bert_config.h"
#include "models/checkpoint.h"
#include "models/json_io.h"
#include "models/safetensors.h"
#include "quant/passes.h"
#include "quant/prune.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "search/command_objective.h"
#include "search/optuna_format.h"
#include "search/sampler.h"
#include "search/space_json.h"
#include "train/lr_schedule.h"
#include "train/train_config.h"

namespace mase::fuzz {

// The bytes as a file of this process (the readers take paths, as the tools do).
// Removed again by run() below.
inline std::string as_file(std::string_view bytes, const char* ext) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("mase-fuzz-" + std::to_string(::getpid()) + ext);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  return path.string();
}
inline void remove_files() {
  std::error_code ec;
  for (const char* ext : {".safetensors", "-config.json", "-compress.json", "-vocab.txt", ".model", ".tokens"})
    std::filesystem::remove(std::filesystem::temp_directory_path() /
                                ("mase-fuzz-" + std::to_string(::getpid()) + ext), ec);
}

// A small BERT for the config passes (bert-tiny with a 32-token vocabulary: every Linear kind).
inline std::shared_ptr<nn::BertForSequenceClassification> tiny_bert() {
  return std::make_shared<nn::BertForSequenceClassification>(nn::BertConfig::preset("bert-tiny", 32));
}

inline void safetensors(std::string_view b) { (void)nn::load_safetensors(as_file(b, ".safetensors")); }
inline void config_json(std::string_view b) {
  (void)nn::load_config(as_file(b, "-config.json"));
}
// {"quantize": ..., "prune": ...} as mase-train --compress reads it, applied to a tiny BERT
inline void compress_config(std::string_view b) {
  auto m = tiny_bert();
  (void)quant::compress(*m, quant::read_config_file(as_file(b, "-compress.json")));
}
inline void prune_config(std::string_view b) {
  (void)quant::parse_prune_spec(nn::parse_json_text(b, "prune.json", "prune"), "prune.json");
}
// vocab.txt lines up to the first empty line, then a text to encode with that vocabulary
inline void wordpiece(std::string_view b) {
  const size_t cut = b.find("\n\n");
  const std::string vocab(b.substr(0, cut));
  auto tok = data::WordPiece::load(as_file(vocab, "-vocab.txt"));
  if (cut != std::string_view::npos) (void)tok->encode(b.substr(cut + 2));
}
inline void sentencepiece(std::string_view b) {
  auto tok = data::SentencePieceTokenizer::load(as_file(b, ".model"));
  (void)tok->encode("A wonderful film.");
}

// A token cache (data/token_cache.h) past its checksum and fingerprint checks, which random
// bytes never pass: the bytes get the checksum they need appended, and are loaded with the
// fingerprints they name (bytes 16..31), so the fuzzer reaches the parsing of sizes, offsets,
// labels and ids. load_token_cache answers a bad file with nothing and a reason (the caller then
// re-tokenizes): the reason is this target's error line.
inline void token_cache(std::string_view b) {
  std::string bytes(b);
  uint64_t fp[2] = {0, 0};
  if (bytes.size() >= 32) std::memcpy(fp, bytes.data() + 16, sizeof fp);
  const uint64_t sum = data::fnv1a(bytes);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  std::string why;
  const auto cache = data::load_token_cache(as_file(bytes, ".tokens"), fp[0], fp[1], &why);
  if (!cache) throw IoError("[token-cache] " + (why.empty() ? std::string("no file") : why));
}
// A study's stored space (the "mase:space" system attribute, search/space_json.h) as
// search/study.cpp reads it from a database someone else may have written: parsed (a parse
// error becomes the IoError study.cpp gives), compared with a space of each kind, rebuilt.
inline void study_space(std::string_view b) {
  nlohmann::json stored;
  try {
    stored = search::optuna::parse_stored(std::string(b), "a mase:space");
  } catch (const nlohmann::json::exception& e) {
    throw IoError(std::string("[study] unreadable mase:space: ") + e.what());
  }
  search::Space given;
  given.categorical("act", {"relu", "gelu"}).integer("layers", 2, 8).real("lr", 1e-5, 1e-2, true);
  (void)search::space_difference(stored, search::space_to_json(given));
  try {
    (void)search::space_from_json(stored);
  } catch (const nlohmann::json::exception& e) {  // as study.cpp turns it into one line
    throw IoError(std::string("[study] unreadable mase:space: ") + e.what());
  }
}
// One parameter's distribution_json as an Optuna script wrote it (search/optuna_format.h), and
// the same bytes as a trial's datetime_start column, read as text and as seconds (NaN when
// they are not a time; never infinite).
inline void optuna_distribution(std::string_view b) {
  const std::string text(b);
  (void)search::optuna::iso_time(text);
  const double t = search::optuna::epoch_seconds(text);
  if (!std::isnan(t) && !std::isfinite(t))
    throw std::logic_error("[optuna_distribution] a stored time read as infinite");
  (void)search::optuna::param_from_distribution("x", text);
}

// The --space string of mase-search custom (search/command_objective.h; a command-line
// argument, so it ends at a NUL), then what the command does with the space before a trial
// runs: the --command placeholder check (with every parameter in the command), the space as
// the study stores it (mase:space, read back as a reopen reads it; each parameter's Optuna
// distribution_json and back), the grid sampler's check of the space (refusing one is an
// answer, not an error: random is the default), and trial 0 drawn by the random sampler, its
// values expanded into the command and read back from their text. A space that parses but does
// not survive a step is a bug: std::logic_error, which the fuzzer and the corpus test report.
inline void space_spec(std::string_view b) {
  const search::Space space = search::parse_space_spec(std::string(b.substr(0, b.find('\0'))));
  std::string command = "echo {trial}";
  for (const search::Param& p : space.params()) command += " {" + p.name + "}";
  (void)search::command_objective(space, command);
  const nlohmann::json given = search::space_to_json(space);
  const nlohmann::json stored = search::optuna::parse_stored(given.dump(), "a mase:space");
  if (!search::space_difference(stored, given).empty() ||
      search::space_to_json(search::space_from_json(stored)) != given)
    throw std::logic_error("[space_spec] the space changed on its way through mase:space");
  for (const search::Param& p : space.params())
    if (!search::optuna::same_param(
            p, search::optuna::param_from_distribution(p.name, search::optuna::distribution_json(p))))
      throw std::logic_error("[space_spec] parameter '" + p.name + "' changed through distribution_json");
  try {
    search::GridSampler::check_space(space);
  } catch (const ConfigError&) {
  }
  const search::Values values = *search::RandomSampler(0).sample(space, {}, 0);
  (void)search::expand_command(command, space, values, 0);
  for (const search::Param& p : space.params()) {
    const double v = values.at(p.name);
    if (!p.contains(v) || p.parse(p.format(v)) != v)
      throw std::logic_error("[space_spec] parameter '" + p.name + "' sampled " + p.format(v) +
                             ", which it does not read back");
  }
}
// A run folder's train_config.json as mase-train --resume reads it (train/session.cpp): parsed
// as read_json parses it (nn::parse_json_text: the depth limit, a parse error as one IoError
// line), TrainConfig::from_json (which validates), validate() and the device as resume checks
// them, and to_json, which ranks compare: each value as it was read (a number that changed on
// the way in is a bug: std::logic_error) and read back. Resume uses the config's resolved recipe
// as saved (it does not call resolve_recipe): what the Trainer derives from it before any data
// is read — the steps of an epoch of IMDb's 25,000 training reviews (or the subset), the total,
// the warm-up and the schedule — comes last.
inline void train_config(std::string_view b) {
  const nlohmann::json j = nn::parse_json_text(b, "train_config.json", "resume");
  const train::TrainConfig c = train::TrainConfig::from_json(j, "train_config.json");
  c.validate();
  (void)Device::parse(c.device);
  const nlohmann::json written = c.to_json();  // every value read is the value written back
  for (const auto& [key, value] : j.items())
    if (written.at(key) != value)
      throw std::logic_error("[train_config] " + key + " was read as " + written.at(key).dump());
  if (train::TrainConfig::from_json(written, "to_json").to_json() != written)
    throw std::logic_error("[train_config] the config changed on its way through to_json");
  const int64_t reviews = c.train_subset > 0 ? std::min<int64_t>(c.train_subset, 25000) : 25000;
  const int64_t total = train::total_steps(c, (reviews + c.batch_size - 1) / c.batch_size);
  (void)train::LrSchedule::parse(c.schedule, train::warmup_steps(c, total), total);
}

// A `mase-search custom` command's stdout as the search reads it (search/command_objective.h):
// every line through report_line and constraint_line (a report's step >= 0, a constraint
// finite), and the last non-empty line as the trial's value. What parses must print and parse
// back to the same numbers; anything else is one Error line.
inline void command_output(std::string_view b) {
  std::string text(b.substr(0, b.find('\0'))), line, last;
  text += '\n';
  for (char c : text) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    if (const auto r = search::report_line(line)) {
      const auto again = search::report_line(
          "mase:report " + std::to_string(r->first) + " " + search::optuna::number_json(r->second));
      if (r->first < 0 || !again || again->first != r->first ||
          !(again->second == r->second || (std::isnan(again->second) && std::isnan(r->second))))
        throw std::logic_error("[command_output] report '" + line + "' did not read back");
    }
    if (const auto c2 = search::constraint_line(line))
      if (!std::isfinite(c2->second) || c2->first.empty())
        throw std::logic_error("[command_output] constraint '" + line + "' is not finite");
    line.clear();
  }
  if (!last.empty()) (void)search::output_values(last, 1);
}

inline const std::map<std::string, std::function<void(std::string_view)>>& targets() {
  static const std::map<std::string, std::function<void(std::string_view)>> t = {
      {"safetensors", safetensors}, {"config_json", config_json},
      {"compress_config", compress_config}, {"prune_config", prune_config},
      {"wordpiece", wordpiece}, {"sentencepiece", sentencepiece}, {"token_cache", token_cache},
      {"study_space", study_space}, {"optuna_distribution", optuna_distribution},
      {"space_spec", space_spec}, {"train_config", train_config},
      {"command_output", command_output}};
  return t;
}

// Runs target `name` on `bytes`: the mase::Error message, or "" when accepted.
inline std::string run(const std::string& name, std::string_view bytes) {
  std::string message;
  try {
    targets().at(name)(bytes);
  } catch (const Error& e) {
    message = e.what();
  }
  remove_files();
  return message;
}

}  // namespace mase::fuzz
