// data/dataset.cpp — load_imdb: data, tokenizer, token cache (the steps of dataset.h).
#include "data/dataset.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>

#include "data/io.h"
#include "data/token_cache.h"
#include "data/wordpiece.h"
#include "runtime/error.h"

namespace mase::data {
namespace fs = std::filesystem;

uint64_t data_fingerprint(const fs::path& source) {
  if (!fs::is_directory(source)) {
    std::string bytes = read_file(source, "data");
    return fnv1a(bytes, fnv1a("archive\n"));
  }
  // Folder: the sorted (relative path, size, mtime) of every file under {train,test}/{pos,neg}.
  std::vector<std::string> lines;
  for (const char* split : {"train", "test"}) {
    for (const char* label : {"pos", "neg"}) {
      fs::path dir = source / split / label;
      if (!fs::is_directory(dir)) continue;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        auto mtime = e.last_write_time().time_since_epoch().count();
        lines.push_back(cat(split, "/", label, "/", e.path().filename().string(), " ",
                            e.file_size(), " ", mtime, "\n"));
      }
    }
  }
  std::sort(lines.begin(), lines.end());
  uint64_t h = fnv1a("folder\n");
  for (const std::string& l : lines) h = fnv1a(l, h);
  return h;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }  // all threads

}  // namespace

ImdbData load_imdb(const ImdbOptions& opt) {
  auto note = opt.note ? opt.note : [](const std::string& s) {
    std::fprintf(stderr, "[data] %s\n", s.c_str());
  };
  MASE_CHECK(opt.tokenizer == "wordpiece" || opt.tokenizer == "sentencepiece", ConfigError,
             "[data] expected --tokenizer wordpiece or sentencepiece, got '", opt.tokenizer, "'");
  ImdbData out;
  const fs::path dir = data_dir(opt.data_dir);
  out.source = resolve_imdb(dir, opt.fetch);
  const fs::path cache_dir = opt.cache_dir.empty() ? default_cache_dir() / "imdb" : fs::path(opt.cache_dir);
  // a file there is a mistake, not a cache that cannot be written (which only costs time): it
  // would retrain the tokenizer on every run, quietly
  std::error_code ec;
  MASE_CHECK(!fs::exists(cache_dir, ec) || fs::is_directory(cache_dir, ec), ConfigError,
             "[--cache-dir] expected a folder, got ", cache_dir.string(), " (a file)");
  const uint64_t data_fp = data_fingerprint(out.source);

  std::optional<Imdb> imdb;  // read at most once, only when needed
  auto read = [&]() -> Imdb& {
    if (!imdb) {
      auto t0 = std::chrono::steady_clock::now();
      double c0 = cpu_seconds();
      imdb = read_imdb(out.source);
      out.read_seconds = seconds_since(t0);
      out.read_cpu_seconds = cpu_seconds() - c0;
      out.read_stats = imdb->stats;
    }
    return *imdb;
  };

  // ---- tokenizer ----
  if (opt.tokenizer == "wordpiece") {
    out.tokenizer_path =
        opt.vocab.empty() ? dir / "bert-uncased-vocab" / "vocab.txt" : fs::path(opt.vocab);
    MASE_CHECK(fs::is_regular_file(out.tokenizer_path), ConfigError,
               "[data] expected a WordPiece vocab.txt at ", out.tokenizer_path.string(),
               ", got nothing there (pass --vocab FILE, e.g. the vocab.txt of bert-base-uncased)");
    out.tokenizer = WordPiece::load(out.tokenizer_path);
  } else if (!opt.vocab.empty()) {
    out.tokenizer_path = opt.vocab;
    out.tokenizer = SentencePieceTokenizer::load(out.tokenizer_path);
  } else {
    out.tokenizer_path = cache_dir / sentencepiece_model_name("imdb", data_fp, opt.sentencepiece);
    if (fs::is_regular_file(out.tokenizer_path)) {
      try {
        out.tokenizer = SentencePieceTokenizer::load(out.tokenizer_path);
      } catch (const IoError& e) {
        note(cat("retraining: ", e.what()));
      }
    }
    if (!out.tokenizer) {
      Imdb& data = read();
      std::vector<std::string_view> texts;
      for (const Review& r : data.train) texts.push_back(r.text);  // never the test split
      note(cat("training a sentencepiece unigram model (vocab ", opt.sentencepiece.vocab_size,
               ") on ", texts.size(), " training reviews"));
      auto t0 = std::chrono::steady_clock::now();
      auto model = train_sentencepiece(texts, opt.sentencepiece);
      out.train_tokenizer_seconds = seconds_since(t0);
      try {
        model->save(out.tokenizer_path);
        note(cat("saved ", out.tokenizer_path.string()));
      } catch (const IoError& e) {
        note(cat("model not saved, it will be retrained next time: ", e.what()));
      }
      out.tokenizer = std::move(model);
    }
  }

  // ---- token ids ----
  out.cache_path =
      cache_dir / cat("imdb-", out.tokenizer->name(), "-", out.tokenizer->vocab_size(), ".tokens");
  const uint64_t tok_fp = out.tokenizer->fingerprint();
  if (opt.cache == CacheMode::kUse) {
    std::string why;
    if (auto c = load_token_cache(out.cache_path, tok_fp, data_fp, &why)) {
      out.train = std::move(c->train);
      out.test = std::move(c->test);
      out.from_cache = true;
      return out;
    }
    if (!why.empty()) note(cat("rebuilding ", out.cache_path.string(), ": ", why));
  }
  Imdb& data = read();
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  out.train = tokenize_all(data.train, *out.tokenizer);
  out.test = tokenize_all(data.test, *out.tokenizer);
  out.tokenize_seconds = seconds_since(t0);
  out.tokenize_cpu_seconds = cpu_seconds() - c0;
  if (opt.cache != CacheMode::kOff) {
    try {
      save_token_cache(out.cache_path, tok_fp, data_fp, out.train, out.test);
    } catch (const IoError& e) {
      note(cat("token cache not saved (", e.what(), "); pass --cache-dir to a writable folder"));
    }
  }
  return out;
}

}  // namespace mase::data
