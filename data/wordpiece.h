// data/wordpiece.h — WordPiece, compatible with BERT uncased checkpoints and their vocab.txt.
//
// encode(text) = [CLS] + wordpiece(w) for each word w of basic_tokenize(text) + [SEP], where
// wordpiece(w) is greedy longest-match-first (Wu et al. 2016; Devlin et al. 2019):
//   start at the beginning of w; take the longest vocabulary entry that w continues with
//   (written "##piece" when it is not at the start of w); repeat from where it ended.
//   If at some point no entry matches, or w has more than 100 code points, the whole word
//   is ONE [UNK] (not the pieces found so far).
// Example with the real vocab: "unaffable" -> un ##af ##fa ##ble.
// The ids equal HuggingFace BertTokenizer(do_lower_case=True) token for token; the test
// compares hundreds of real reviews and edge strings (tests/data/test_wordpiece.cpp). One
// deliberate difference: text is never searched for special tokens, so a review containing
// "[SEP]" gets "[", "sep", "]" (HF's split_special_tokens=True), never a real separator.
//
// Read next: sentencepiece_tokenizer.h (the other tokenizer), dataset.h (who calls encode).
#pragma once
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace mase::data {

class WordPiece : public Tokenizer {
 public:
  static constexpr int64_t kMaxCharsPerWord = 100;

  // Reads vocab.txt (one token a line, id = line number from 0). IoError when the file is
  // missing or lacks one of [PAD], [UNK], [CLS], [SEP].
  static std::unique_ptr<WordPiece> load(const std::filesystem::path& vocab_txt);
  // From tokens in id order; `source` names where they came from (for messages).
  explicit WordPiece(std::vector<std::string> tokens, std::string source = "vocabulary");

  std::string name() const override { return "wordpiece"; }
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const override;
  // Pieces joined by spaces, "##" continuations glued on: "un ##af ##fa ##ble" -> "unaffable".
  // Lossy: case, accents and the spacing around punctuation are gone.
  std::string decode(std::span<const int32_t> ids) const override;
  std::string piece(int32_t id) const override { return token(id); }
  const SpecialIds& special() const override { return special_; }
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  void save(const std::filesystem::path& path) const override;
  uint64_t fingerprint() const override { return fingerprint_; }

  const std::string& token(int32_t id) const;  // "##ble"
  int32_t id(std::string_view token) const;    // -1 when not in the vocabulary
  // The pieces of `text` as strings, no [CLS]/[SEP]: tests and debugging.
  std::vector<std::string> tokenize(std::string_view text) const;

 private:
  // Heterogeneous lookup: find(std::string_view) with no std::string built per probe.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, int32_t, Hash, std::equal_to<>>;

  void encode_word(std::string_view word, int64_t chars, std::vector<int32_t>& out) const;

  std::vector<std::string> tokens_;
  Map start_;  // every token -> id: pieces that start a word
  Map cont_;   // "##piece" -> id, stored WITHOUT the "##": pieces that continue a word
  size_t max_start_bytes_ = 0, max_cont_bytes_ = 0;  // longest keys: where matching starts
  SpecialIds special_;
  uint64_t fingerprint_ = 0;
};

}  // namespace mase::data
