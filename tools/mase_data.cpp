// tools/mase_data.cpp — `mase-data`: fetch IMDb, print its statistics and tokenizer speed.
//
//   mase-data fetch imdb                      # find it, or download it into the cache
//   mase-data stats imdb --tokenizer wordpiece --vocab vocab.txt
//   mase-data encode "A masterpiece!" --vocab vocab.txt    # pieces and ids of one text
//
// A thin main over data/dataset.h: parse flags (CLI11), call the library, print. Errors
// from the library are printed as their one line; exit status 1, or 2 for a bad flag or
// config (tools/cli.h).
// Read next: data/dataset.h, docs/data.md (what the figures mean, measured output).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <tuple>

#include "data/dataset.h"
#include "data/stats.h"
#include "data/token_cache.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "tools/cli.h"

using namespace mase;
using namespace mase::data;

namespace {

// 1234567 -> "1,234,567"
std::string commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

double file_mb(const std::filesystem::path& p) {
  std::error_code ec;
  auto size = std::filesystem::file_size(p, ec);
  return ec ? 0.0 : static_cast<double>(size) / 1e6;
}

void print_row(const char* split, const char* label, const LengthStats& s) {
  std::printf("%-6s %-5s %8s %11s %6.1f %5lld %5lld %5lld %5lld %6lld %6.1f%% %6.1f%% %6.1f%%\n",
              split, label, commas(s.count).c_str(), commas(s.tokens).c_str(), s.mean,
              (long long)s.p50, (long long)s.p90, (long long)s.p95, (long long)s.p99,
              (long long)s.max, 100 * s.over128, 100 * s.over256, 100 * s.over512);
}

// Where the data came from, and how long reading, tokenizing and reloading took.
void print_timings(const ImdbData& d) {
  const ReadStats& r = d.read_stats;
  const int64_t reviews = d.train.size() + d.test.size();
  const auto ids = static_cast<int64_t>(d.train.ids.size() + d.test.ids.size());
  std::printf("data       %s\n", d.source.string().c_str());
  std::printf("read       %s reviews, %.1f MB of text, in %.2f s (%.2f s CPU)\n",
              commas(r.reviews).c_str(), r.bytes / 1e6, d.read_seconds, d.read_cpu_seconds);
  std::printf("           %s empty, %s with invalid UTF-8 (%s U+FFFD), %s other entries skipped\n",
              commas(r.empty).c_str(), commas(r.invalid_utf8).c_str(),
              commas(r.replaced_chars).c_str(), commas(r.ignored_entries).c_str());
  std::printf("tokenizer  %s, vocab %s, %s\n", d.tokenizer->name().c_str(),
              commas(d.tokenizer->vocab_size()).c_str(), d.tokenizer_path.string().c_str());
  if (d.train_tokenizer_seconds > 0) {
    std::printf("trained    in %.1f s on the train split (not counted below)\n",
                d.train_tokenizer_seconds);
  }
  std::printf("tokenize   %s reviews -> %s ids in %.2f s on %d thread%s (%.2f s CPU)\n",
              commas(reviews).c_str(), commas(ids).c_str(), d.tokenize_seconds, num_threads(),
              num_threads() == 1 ? "" : "s",
              d.tokenize_cpu_seconds);
  std::printf("           %s reviews/s, %.2f M ids/s\n",
              commas(static_cast<int64_t>(reviews / d.tokenize_seconds)).c_str(),
              ids / 1e6 / d.tokenize_seconds);
  if (std::filesystem::exists(d.cache_path)) {
    // What a second run does: fingerprint the data, load and check the cache.
    auto t0 = std::chrono::steady_clock::now();
    auto c = load_token_cache(d.cache_path, d.tokenizer->fingerprint(), data_fingerprint(d.source));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("cache      %s (%.1f MB), %s in %.2f s\n", d.cache_path.string().c_str(),
                file_mb(d.cache_path), c ? "reloaded" : "NOT reloadable", secs);
  }
}

// Compute spent on padding in one training epoch (batch 32, max_len 256), by batching policy.
void print_padding(const TokenizedSplit& train) {
  BatchOptions bo;
  bo.batch_size = 32;
  bo.max_len = 256;
  auto slots = [&](bool fixed, int64_t bucket) {
    BatchOptions o = bo;
    o.fixed_length = fixed;
    o.bucket_batches = bucket;
    return static_cast<double>(epoch_slots(Batcher(train, o)));
  };
  Batcher any(train, bo);
  double real = 0;
  for (int64_t i = 0; i < train.size(); ++i) real += static_cast<double>(any.length(i));
  std::printf("padding    one train epoch, batch 32, max_len 256: %.2f M real ids; computed:\n",
              real / 1e6);
  for (auto [name, fixed, bucket] :
       {std::tuple{"fixed length", true, 0}, std::tuple{"dynamic (longest in batch)", false, 0},
        std::tuple{"bucketed, windows of 100 batches", false, 100}}) {
    double n = slots(fixed, bucket);
    std::printf("           %-33s %6.2f M slots, %4.1f%% of them padding\n", name, n / 1e6,
                100 * (1 - real / n));
  }
}

void print_lengths(const ImdbData& d) {
  std::printf("\nlengths in ids, [CLS] and [SEP] included; >N = share truncated at max_len N\n");
  std::printf("%-6s %-5s %8s %11s %6s %5s %5s %5s %5s %6s %7s %7s %7s\n", "split", "label",
              "reviews", "ids", "mean", "p50", "p90", "p95", "p99", "max", ">128", ">256", ">512");
  for (const auto& [name, split] : {std::pair{"train", &d.train}, std::pair{"test", &d.test}}) {
    print_row(name, "neg", length_stats(*split, 0));
    print_row(name, "pos", length_stats(*split, 1));
    print_row(name, "all", length_stats(*split));
  }
}

int stats(ImdbOptions opt) {
  opt.cache = CacheMode::kRebuild;  // tokenize for real: the throughput is what is measured
  ImdbData d = load_imdb(opt);
  print_timings(d);
  print_padding(d.train);
  print_lengths(d);
  return 0;
}

// Prints the pieces and ids of `text`: what the model will see.
int encode(const ImdbOptions& opt, const std::string& text) {
  std::filesystem::path path = opt.vocab;
  if (path.empty()) path = data_dir(opt.data_dir) / "bert-uncased-vocab" / "vocab.txt";
  std::unique_ptr<Tokenizer> tok = load_tokenizer(path);
  std::vector<int32_t> ids = tok->encode(text);
  std::string pieces;
  for (int32_t id : ids) pieces += (pieces.empty() ? "" : " ") + tok->piece(id);
  std::printf("%s (%zu ids)\n", pieces.c_str(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
  std::printf("\ndecoded: %s\n", tok->decode(ids).c_str());
  return 0;
}

int fetch(const ImdbOptions& opt) {
  std::filesystem::path dir = data_dir(opt.data_dir);
  std::filesystem::path p = resolve_imdb(dir, opt.fetch);
  // Read it through once (a second or two): a truncated or damaged download is said here,
  // by the command a user runs to check it, not later by the first training run.
  const Imdb imdb = read_imdb(p);
  char what[64] = "extracted folder";
  if (!std::filesystem::is_directory(p)) std::snprintf(what, sizeof what, "%.1f MB archive", file_mb(p));
  std::printf("imdb: %s (%s; read through: %s train / %s test reviews)\n", p.string().c_str(),
              what, commas(int64_t(imdb.train.size())).c_str(),
              commas(int64_t(imdb.test.size())).c_str());
  return 0;
}

// The first word that is not a flag or a flag's value: the command (mase-data's flags that
// take a value are all of the --name VALUE form or --name=VALUE).
std::string first_command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-", 0) != 0) return a;
    if (a.find('=') == std::string::npos && a != "-h" && a != "--help") ++i;  // its value
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mase-data: the IMDb dataset and its tokenizers"};
  app.footer(
      "Examples:\n"
      "  mase-data fetch imdb\n"
      "  mase-data stats imdb --tokenizer wordpiece     # <data dir>/bert-uncased-vocab/vocab.txt\n"
      "  mase-data encode \"A masterpiece!\"             # the same vocab.txt\n"
      "  mase-data stats imdb --tokenizer sentencepiece --vocab-size 16000 \\\n"
      "      --data-dir ../shared/data --cache-dir /tmp/mase\n"
      "Data folder: --data-dir, else $MASE_DATA_DIR, else ~/.cache/mase (see docs/data.md).");
  app.require_subcommand(1);
  app.fallthrough();  // --data-dir and --threads work after the subcommand too
  ImdbOptions opt;
  std::string dataset = "imdb";
  int threads = 0;
  app.add_option("--data-dir", opt.data_dir,
                 "folder with imdb/ in it (default: $MASE_DATA_DIR or ~/.cache/mase)")
      ->check(cli::nonempty("a folder"));
  app.add_option("--threads", threads, "threads for tokenization (0 = all cores)")
      ->check(CLI::Range(0, 4096));

  CLI::App* f = app.add_subcommand("fetch", "find IMDb in the data folder, or download it there");
  f->add_option("dataset", dataset, "dataset name (imdb)")->check(CLI::IsMember({"imdb"}));
  f->add_option("--url", opt.fetch.url, "where to download from (a mirror)")
      ->check(cli::nonempty("a URL"));

  CLI::App* s = app.add_subcommand("stats", "counts, token lengths and tokenizer throughput");
  s->add_option("dataset", dataset, "dataset name (imdb)")->check(CLI::IsMember({"imdb"}));
  s->add_option("--tokenizer", opt.tokenizer, "wordpiece or sentencepiece")
      ->check(CLI::IsMember({"wordpiece", "sentencepiece"}));
  s->add_option("--vocab", opt.vocab,
                "wordpiece: vocab.txt (default <data dir>/bert-uncased-vocab/vocab.txt); "
                "sentencepiece: a .model (default: trained on the train split and cached)")
      ->check(cli::existing_file("a tokenizer file (vocab.txt or .model)"));
  s->add_option("--vocab-size", opt.sentencepiece.vocab_size,
                "sentencepiece vocabulary when training")
      ->check(CLI::Range(8, 1 << 20));
  s->add_option("--cache-dir", opt.cache_dir,
                "where models and token caches go (default $MASE_CACHE_DIR/imdb, else ~/.cache/mase/imdb)")
      ->check(cli::nonempty("a folder"));
  s->add_option("--url", opt.fetch.url, "where to download IMDb from if it is missing")
      ->check(cli::nonempty("a URL"));

  // each command its own examples (CLI11 would show mase-data's under `fetch --help`)
  f->footer("Examples:\n  mase-data fetch imdb --data-dir ../shared/data\n"
            "  mase-data fetch imdb --url https://mirror.example/aclImdb_v1.tar.gz");
  s->footer("Examples:\n  mase-data stats imdb --tokenizer wordpiece --data-dir ../shared/data\n"
            "  mase-data stats imdb --tokenizer sentencepiece --vocab-size 16000 "
            "--data-dir ../shared/data --cache-dir /tmp/mase");
  CLI::App* e = app.add_subcommand("encode", "tokenize one text and print its pieces and ids");
  e->footer("Examples:\n  mase-data encode \"A masterpiece!\" --data-dir ../shared/data\n"
            "  mase-data encode \"Quote the text: one argument\" --vocab runs/x/tokenizer.model");
  std::string text;
  e->add_option("text", text, "the text")->required();
  e->add_option("--vocab", opt.vocab,
                "vocab.txt (WordPiece) or .model (sentencepiece); default "
                "<data dir>/bert-uncased-vocab/vocab.txt")
      ->check(cli::existing_file("a tokenizer file (vocab.txt or .model)"));

  // CLI11 would call an unknown command word a missing one ("A subcommand is required")
  if (const std::string w = first_command_word(argc, argv);
      !w.empty() && w != "fetch" && w != "stats" && w != "encode") {
    std::fprintf(stderr, "mase-data: unknown command '%s' (expected fetch, stats or encode; see "
                 "--help)\n", w.c_str());
    return cli::kExitUsage;
  }
  if (auto status = cli::parse(app, "mase-data", argc, argv)) return *status;
  return cli::run("mase-data", [&] {
    MASE_CHECK(s->count("--vocab-size") == 0 ||
                   (opt.tokenizer == "sentencepiece" && s->count("--vocab") == 0),
               ConfigError, "--vocab-size sets the size of a sentencepiece model to train; it "
               "contradicts --vocab / --tokenizer wordpiece (the vocabulary file decides)");
    set_num_threads(threads);
    if (f->parsed()) return fetch(opt);
    if (e->parsed()) return encode(opt, text);
    return stats(opt);
  });
}
