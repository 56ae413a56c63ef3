// data/tokenizer.h — the one interface both tokenizers (WordPiece, sentencepiece) implement.
//
// encode turns text into ids framed as BERT expects: [CLS] t1 … tn [SEP]. Everything after
// tokenization (batches, the cache, the trainer) sees only ids and these special ids; pad is
// 0 for both tokenizers, so a zero-filled tensor is already padding.
// encode is const and thread-safe: tokenize_all (tokenized.h) calls it from many threads.
//
// Read next: wordpiece.h, sentencepiece_tokenizer.h, dataset.h.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mase::data {

struct SpecialIds {
  int32_t pad = 0;    // padding (attention_mask 0 there)
  int32_t unk = -1;   // unknown piece
  int32_t cls = -1;   // first id of every sequence ("start")
  int32_t sep = -1;   // last id of every sequence ("end")
  int32_t mask = -1;  // [MASK] for masked-LM; -1 when the vocabulary has none
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;  // "wordpiece" or "sentencepiece"
  // [CLS] pieces… [SEP] (add_special = false: the pieces only).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = true) const = 0;
  // Text of the ids, special ids (pad, cls, sep, mask) skipped. Lossy: see each tokenizer.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // The vocabulary entry of one id, as stored: "##ble" (WordPiece), "\u2581the" (sentencepiece).
  virtual std::string piece(int32_t id) const = 0;
  virtual const SpecialIds& special() const = 0;
  virtual int32_t vocab_size() const = 0;
  // Writes the file that load_tokenizer reads back (vocab.txt or a .model), atomically.
  virtual void save(const std::filesystem::path& path) const = 0;
  // 64-bit hash of everything that changes the ids (vocabulary, options, code version):
  // the token-id cache is valid only for the fingerprint it was written with.
  virtual uint64_t fingerprint() const = 0;
};

// Reads a saved tokenizer: a .model file is sentencepiece, anything else a WordPiece vocab.txt.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

// FNV-1a, 64-bit: the fingerprint hash (not cryptographic; detects changes, not attacks).
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnvOffset) {
  return fnv1a(s.data(), s.size(), h);
}

}  // namespace mase::data
