// tests/train/trainer_fixture.h — a made-up IMDb that a tiny BERT can learn in a second.
//
// Reviews are random sentences over a 60-entry WordPiece vocabulary: neutral words plus 1–3
// words of the review's sentiment ("great", "loved" / "awful", "boring"), so the label is in
// the words and a bag of words (which mean pooling is) separates the classes. They are
// written in the official aclImdb layout (tests/data/data_helpers.h) with a vocab.txt and
// an HF config.json for an L1 H16 A2 I32 BERT, so the whole of mase-train's pipeline — IMDb
// reader, tokenizer, token cache, batches, model, trainer — runs on them in well under a second.
#pragma once
#include <fstream>
#include <string>
#include <vector>

#include "data/data_helpers.h"
#include "models/safetensors.h"
#include "train/session.h"

namespace mase::test {

inline const std::vector<std::string>& fixture_words(int kind) {  // 0 neutral, 1 pos, 2 neg
  static const std::vector<std::string> neutral = {
      "the", "a", "film", "movie", "plot", "acting", "was", "is", "it", "and", "story",
      "actors", "music", "scene", "this", "i", "very", "really", "quite", "of", "to", "in",
      "end", "director", "cast", "script", "ending", "time", "seen", "watched", "one", "two"};
  static const std::vector<std::string> pos = {"great", "wonderful", "loved", "best",
                                               "fun",   "superb",    "brilliant", "moving"};
  static const std::vector<std::string> neg = {"bad",  "awful", "boring", "worst",
                                               "dull", "poor",  "waste",  "terrible"};
  return kind == 0 ? neutral : kind == 1 ? pos : neg;
}

// A review of 6..19 words with 1..3 sentiment words of `label` (1 pos, 0 neg); `state` is an
// LCG state (Knuth's MMIX constants), so the data are the same on every run.
inline std::string fixture_review(int label, uint64_t& state) {
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const auto& neutral = fixture_words(0);
  const auto& senti = fixture_words(label == 1 ? 1 : 2);
  std::vector<std::string> words;
  const uint64_t n = 6 + next(14), k = 1 + next(3);
  for (uint64_t i = 0; i < n; ++i) words.push_back(neutral[next(neutral.size())]);
  for (uint64_t i = 0; i < k; ++i) words[next(words.size())] = senti[next(senti.size())];
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
  return text + ".";
}

// Silences a session's printing: a FILE* that discards everything.
struct NullOut {
  std::FILE* f = std::fopen("/dev/null", "w");
  ~NullOut() { std::fclose(f); }
  operator std::FILE*() const { return f; }
};

struct TrainFixture {
  TempDir dir;
  NullOut null;  // where the sessions under test print
  fs::path data_dir, vocab, model_config;
  int64_t vocab_size = 0;

  // `train_per_label` / `test_per_label` reviews of each label in each split.
  explicit TrainFixture(int train_per_label = 48, int test_per_label = 16) {
    train::clear_stop();  // a stop requested by an earlier test must not leak into this one
    data_dir = dir.path / "data";
    std::vector<std::pair<std::string, std::string>> files;
    uint64_t state = 12345;
    for (const char* split : {"train", "test"}) {
      const int n = std::string(split) == "train" ? train_per_label : test_per_label;
      for (int label = 0; label < 2; ++label) {
        for (int i = 0; i < n; ++i) {
          files.push_back({std::string(split) + (label ? "/pos/" : "/neg/") + std::to_string(i) +
                               (label ? "_9.txt" : "_2.txt"),
                           fixture_review(label, state)});
        }
      }
    }
    write_imdb_folder(data_dir / "imdb", files);
    // vocab.txt: the specials, then every word and "." (WordPiece splits punctuation off)
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\n";
    vocab_size = 6;
    for (int kind = 0; kind < 3; ++kind) {
      for (const auto& w : fixture_words(kind)) {
        v += w + "\n";
        ++vocab_size;
      }
    }
    vocab = dir.path / "vocab.txt";
    write_bytes(vocab, v);
    model_config = dir.path / "tiny.json";
    write_bytes(model_config, cat("{\"vocab_size\": ", vocab_size,
                                  ", \"hidden_size\": 16, \"num_hidden_layers\": 1, "
                                  "\"num_attention_heads\": 2, \"intermediate_size\": 32, "
                                  "\"max_position_embeddings\": 64}"));
  }

  // A config for the fixture: 96 reviews in batches of 8 = 12 steps per epoch.
  train::TrainConfig config(const std::string& out_name) const {
    train::TrainConfig c;
    c.model = model_config.string();
    c.data_dir = data_dir.string();
    c.cache_dir = (dir.path / "cache").string();
    c.tokenizer = "wordpiece";
    c.vocab = vocab.string();
    c.max_len = 32;
    c.batch_size = 8;
    c.eval_batch_size = 16;
    c.epochs = 2;
    c.lr = 1e-2;
    c.warmup = 2;
    c.log_every = 1;
    c.ckpt_every = 5;
    c.out = (dir.path / out_name).string();
    return c;
  }
  fs::path run(const std::string& name) const { return dir.path / name; }
};

// Every tensor of a saved model as its raw f32 values, by key: to compare runs bit for bit.
inline std::map<std::string, std::vector<float>> weights_of(const fs::path& safetensors) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : nn::load_safetensors(safetensors.string()).tensors)
    out[name] = t.to_vector<float>();
  return out;
}

inline nlohmann::json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace mase::test
