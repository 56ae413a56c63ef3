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

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
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
#include "runtime/error.h"
#include "search/optuna_format.h"
#include "search/space_json.h"

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
// One parameter's distribution_json as an Optuna script wrote it (search/optuna_format.h).
inline void optuna_distribution(std::string_view b) {
  (void)search::optuna::param_from_distribution("x", std::string(b));
}

inline const std::map<std::string, std::function<void(std::string_view)>>& targets() {
  static const std::map<std::string, std::function<void(std::string_view)>> t = {
      {"safetensors", safetensors}, {"config_json", config_json},
      {"compress_config", compress_config}, {"prune_config", prune_config},
      {"wordpiece", wordpiece}, {"sentencepiece", sentencepiece}, {"token_cache", token_cache},
      {"study_space", study_space}, {"optuna_distribution", optuna_distribution}};
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
