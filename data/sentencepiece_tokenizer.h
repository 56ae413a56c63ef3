// data/sentencepiece_tokenizer.h — a sentencepiece unigram model (Kudo 2018) behind Tokenizer.
//
// Trained with Google's sentencepiece library on the IMDb training split only (never test).
// Normalisation is the library's "nmt_nfkc_cf": Unicode NFKC (ﬁ -> fi, full-width -> ASCII)
// plus case folding (lower-casing), built into the model, so encode needs no preprocessing;
// whitespace becomes the "▁" meta symbol that starts a word piece.
// Special ids, fixed so batches look the same as with BERT's vocabulary:
//   0 [PAD]   1 [UNK]   2 [CLS] (start, sentencepiece's bos)   3 [SEP] (end, its eos)
//   4 [MASK] (a control symbol: an id for masked-LM, never produced from text).
// train_sentencepiece returns a model; dataset.cpp saves it next to the token cache under
// sentencepiece_model_name(...) and reuses it on the next run.
//
// Read next: dataset.h (when it is trained, where it is saved).
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mase::data {

struct SentencePieceOptions {
  int vocab_size = 16000;
  // Share of the training characters that get a piece of their own; the rest become [UNK].
  // 1.0 (every character seen in training) suits English, sentencepiece's advice for small
  // alphabets; at 0.9995 the é of "café" would be [UNK] in IMDb.
  double character_coverage = 1.0;
  int max_sentence_bytes = 1 << 16;  // longer training texts are skipped (IMDb max: 14 KB)
  int threads = 0;                   // 0 = mase::num_threads()
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  // From the bytes of a .model file; IoError when they do not parse or lack the special ids.
  SentencePieceTokenizer(std::string serialized_model, std::string source);
  ~SentencePieceTokenizer() override;
  static std::unique_ptr<SentencePieceTokenizer> load(const std::filesystem::path& model);

  std::string name() const override { return "sentencepiece"; }
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const override;
  // The normalised text back (lower-cased, NFKC): "Hello  World" -> "hello world".
  std::string decode(std::span<const int32_t> ids) const override;
  std::string piece(int32_t id) const override;
  const SpecialIds& special() const override { return special_; }
  int32_t vocab_size() const override;
  void save(const std::filesystem::path& path) const override;
  uint64_t fingerprint() const override { return fingerprint_; }

  std::vector<std::string> pieces(std::string_view text) const;  // "▁hello", "▁world": tests

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string serialized_;
  SpecialIds special_;
  uint64_t fingerprint_ = 0;
};

// Trains a unigram model on `texts`. ConfigError with sentencepiece's reason when it cannot
// (e.g. vocab_size larger than the text supports).
std::unique_ptr<SentencePieceTokenizer> train_sentencepiece(
    const std::vector<std::string_view>& texts, const SentencePieceOptions& opt);

// "imdb-sentencepiece-unigram-16000-nfkc_cf-cov1000000-<16 hex digits of data fingerprint>.model"
std::string sentencepiece_model_name(std::string_view dataset, uint64_t data_fingerprint,
                                     const SentencePieceOptions& opt);

}  // namespace mase::data
