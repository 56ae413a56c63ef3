// data/dataset.h — `--data imdb`: find (or fetch) IMDb, tokenize it, cache the ids.
//
// load_imdb is what mase-train and mase-data call. Its steps:
//   1. data: resolve_imdb(data_dir(opt.data_dir)) (fetch.h) -> a folder or the .tar.gz;
//   2. tokenizer:
//      wordpiece      the vocab.txt of --vocab, else <data dir>/bert-uncased-vocab/vocab.txt;
//      sentencepiece  the .model of --vocab, else <cache>/imdb-sentencepiece-unigram-…model
//                     (sentencepiece_model_name), trained on the TRAIN split if missing;
//   3. ids: <cache>/imdb-<tokenizer>-<vocab size>.tokens (token_cache.h) when it matches the
//      tokenizer and data fingerprints; otherwise read + tokenize_all + save it.
// The cache folder is --cache-dir, else default_cache_dir()/imdb ($MASE_CACHE_DIR/imdb, else
// ~/.cache/mase/imdb: never the data folder, fetch.h). A cache that cannot be written (a
// read-only folder) is not an error: a note says so and the run goes on.
//
// Read next: batch.h (turning the splits into tensors), tools/mase_data.cpp (the CLI).
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "data/fetch.h"
#include "data/imdb.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenized.h"
#include "data/tokenizer.h"

namespace mase::data {

enum class CacheMode {
  kUse,      // load the token cache when valid, else build and save it
  kRebuild,  // always tokenize (mase-data stats measures it), then save the cache
  kOff,      // never read or write it
};

struct ImdbOptions {
  std::string data_dir;                 // "" = $MASE_DATA_DIR or ~/.cache/mase (fetch.h)
  std::string cache_dir;                // "" = $MASE_CACHE_DIR/imdb, else ~/.cache/mase/imdb
  std::string tokenizer = "wordpiece";  // or "sentencepiece"
  std::string vocab;                    // vocab.txt (wordpiece) or .model (sentencepiece)
  SentencePieceOptions sentencepiece;   // used when a model has to be trained
  CacheMode cache = CacheMode::kUse;
  FetchOptions fetch;
  // Notes for the user ("training sentencepiece…", "cache rebuilt: …"); default: stderr.
  std::function<void(const std::string&)> note;
};

struct ImdbData {
  TokenizedSplit train, test;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::filesystem::path source;          // the folder or archive the reviews came from
  std::filesystem::path tokenizer_path;  // the vocab.txt or .model in use
  std::filesystem::path cache_path;      // the .tokens file (may not exist: see notes)
  bool from_cache = false;
  ReadStats read_stats;  // all zero when from_cache
  // Wall-clock seconds, and CPU seconds of the whole process (all threads) for the same
  // steps: on a shared machine the CPU time is the steadier figure.
  double read_seconds = 0, tokenize_seconds = 0, train_tokenizer_seconds = 0;
  double read_cpu_seconds = 0, tokenize_cpu_seconds = 0;
};

ImdbData load_imdb(const ImdbOptions& opt);

// What the cache is keyed on: for an archive, FNV-1a of its bytes; for a folder, of the
// names, sizes and modification times of its review files (reading 50,000 files to hash
// them would cost more than the cache saves).
uint64_t data_fingerprint(const std::filesystem::path& source);

}  // namespace mase::data
