// tests/data/test_sentencepiece.cpp — sentencepiece: a tiny unigram model trained on made-up
// text; special ids, normalisation (case folding, NFKC), round trips, save/load, errors.
#include "data/sentencepiece_tokenizer.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

namespace {
using Ids = std::vector<int32_t>;

// 400 made-up "reviews" from 24 words, picked by a fixed linear congruential sequence.
std::vector<std::string> corpus() {
  const char* words[] = {"the",    "movie", "film",   "was",    "great",  "terrible",
                         "acting", "plot",  "boring", "loved",  "hated",  "music",
                         "story",  "and",   "but",    "really", "not",    "very",
                         "good",   "bad",   "actors", "scenes", "ending", "watch"};
  std::vector<std::string> out;
  uint32_t x = 12345;
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int w = 0; w < 12; ++w) {
      x = x * 1664525u + 1013904223u;
      s += std::string(w ? " " : "") + words[(x >> 16) % 24];
    }
    out.push_back(s + ".");
  }
  return out;
}

std::unique_ptr<SentencePieceTokenizer> tiny_model(int vocab_size = 48) {
  static const std::vector<std::string> texts = corpus();
  std::vector<std::string_view> views(texts.begin(), texts.end());
  SentencePieceOptions opt;
  opt.vocab_size = vocab_size;
  opt.threads = 1;
  return train_sentencepiece(views, opt);
}
}  // namespace

TEST_CASE("sentencepiece: a tiny trained model has the fixed special ids") {
  auto sp = tiny_model();
  CHECK(sp->name() == "sentencepiece");
  CHECK(sp->vocab_size() == 48);
  CHECK(sp->special().pad == 0);
  CHECK(sp->special().unk == 1);
  CHECK(sp->special().cls == 2);
  CHECK(sp->special().sep == 3);
  CHECK(sp->special().mask == 4);
  Ids ids = sp->encode("the movie was great.");
  REQUIRE(ids.size() >= 3);
  CHECK(ids.front() == 2);
  CHECK(ids.back() == 3);
  CHECK(sp->encode("the movie was great.", false) == Ids(ids.begin() + 1, ids.end() - 1));
  CHECK(sp->encode("") == Ids{2, 3});
  // Frequent words of the corpus become single pieces "▁word".
  CHECK(sp->pieces("movie was great") ==
        std::vector<std::string>{"\u2581movie", "\u2581was", "\u2581great"});
}

TEST_CASE("sentencepiece: normalisation folds case and NFKC and decode inverts encode") {
  auto sp = tiny_model();
  CHECK(sp->encode("THE Movie WAS great") == sp->encode("the movie was great"));
  CHECK(sp->encode("\uff54\uff48\uff45 film") == sp->encode("the film"));  // full-width ｔｈｅ
  CHECK(sp->encode("the   film") == sp->encode("the film"));               // runs of spaces
  CHECK(sp->decode(sp->encode("The Acting was NOT good.")) == "the acting was not good.");
  // Special ids are skipped by decode, padding included.
  Ids ids = sp->encode("boring plot");
  ids.push_back(0);
  ids.push_back(0);
  CHECK(sp->decode(ids) == "boring plot");
  // A character never seen in training is [UNK] (id 1), not an error.
  Ids z = sp->encode("\u4e2d", false);
  CHECK(std::find(z.begin(), z.end(), 1) != z.end());
  CHECK_THROWS_AS(sp->decode(Ids{48}), ConfigError);
}

TEST_CASE("sentencepiece: save and load give the same model") {
  TempDir tmp;
  auto sp = tiny_model();
  sp->save(tmp / "m.model");
  CHECK(list_files(tmp.path) == std::vector<std::string>{"m.model"});
  auto back = load_tokenizer(tmp / "m.model");
  CHECK(back->name() == "sentencepiece");
  CHECK(back->fingerprint() == sp->fingerprint());
  CHECK(back->encode("loved the music and the ending") ==
        sp->encode("loved the music and the ending"));
  CHECK(tiny_model(40)->fingerprint() != sp->fingerprint());
}

TEST_CASE("sentencepiece: a 1 MB review encodes") {
  auto sp = tiny_model();
  std::string text;
  while (text.size() < (1 << 20)) text += "the movie was great and the music was good. ";
  Ids ids = sp->encode(text);
  CHECK(ids.size() > text.size() / 20);  // at least one id per word (4.4 bytes per word here)
  CHECK(ids.back() == 3);
}

TEST_CASE("sentencepiece: errors are exceptions never aborts") {
  std::vector<std::string_view> few = {"a b c", "a b"};
  SentencePieceOptions opt;
  opt.vocab_size = 5000;  // far more pieces than two lines can give
  std::string msg = error_message([&] { train_sentencepiece(few, opt); });
  CHECK(msg.find("[sentencepiece] training failed") == 0);
  CHECK_THROWS_AS(train_sentencepiece(few, opt), ConfigError);
  CHECK_THROWS_AS(train_sentencepiece({}, SentencePieceOptions{}), ConfigError);
  // Only whitespace: sentencepiece itself would abort the process here (a CHECK).
  std::vector<std::string_view> blank = {"   ", "\t\n", ""};
  CHECK(error_message([&] { train_sentencepiece(blank, opt); }) ==
        "[sentencepiece] expected training texts with visible characters, got 3 texts of "
        "whitespace, control characters or over 65536 bytes");

  TempDir tmp;
  write_bytes(tmp / "bad.model", "not a protobuf at all");
  CHECK(error_message([&] { SentencePieceTokenizer::load(tmp / "bad.model"); })
            .find("[sentencepiece] expected a sentencepiece model in " +
                  (tmp / "bad.model").string()) == 0);
  CHECK_THROWS_AS(SentencePieceTokenizer::load(tmp / "missing.model"), IoError);
}

TEST_CASE("sentencepiece: model names derive from data and options") {
  SentencePieceOptions opt;
  CHECK(sentencepiece_model_name("imdb", 0x0123456789abcdefull, opt) ==
        "imdb-sentencepiece-unigram-16000-nfkc_cf-cov1000000-0123456789abcdef.model");
  opt.vocab_size = 8000;
  opt.character_coverage = 0.9995;
  CHECK(sentencepiece_model_name("imdb", 1, opt) ==
        "imdb-sentencepiece-unigram-8000-nfkc_cf-cov999500-0000000000000001.model");
}
