// data/token_cache.h — the tokenized splits on disk, so a second run skips tokenization.
//
// File layout (little-endian; `imdb-<tokenizer>-<vocab size>.tokens` in the cache folder):
//   offset  size  field
//   0       8     magic "MASETOK\0"
//   8       4     u32 format version (kTokenCacheVersion)
//   12      4     u32 bytes per id: 2 when every id is < 65536 (BERT: 30,522 ids), else 4
//   16      8     u64 tokenizer fingerprint (Tokenizer::fingerprint)
//   24      8     u64 data fingerprint (dataset.h: data_fingerprint)
//   32      32    u64 train reviews, u64 train ids, u64 test reviews, u64 test ids
//   64      …     per split (train, then test): offsets u64[reviews + 1], labels u8[reviews],
//                 ids (u16 or u32)[ids]
//   end-8   8     u64 FNV-1a checksum of every byte before it
// The checksum catches truncation and corruption; the version catches an old layout; the
// fingerprints catch a changed tokenizer or dataset. In all those cases load returns nothing
// and says why, and the caller rebuilds. Files are written with write_text_atomic (runtime/atomic_file.h).
//
// Read next: dataset.h (when the cache is used).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "data/tokenized.h"

namespace mase::data {

constexpr uint32_t kTokenCacheVersion = 1;

struct TokenCache {
  uint64_t tokenizer_fingerprint = 0;
  uint64_t data_fingerprint = 0;
  TokenizedSplit train, test;
};

// Writes atomically; IoError when it cannot. ids must be in [0, 2^32).
void save_token_cache(const std::filesystem::path& path, uint64_t tokenizer_fingerprint,
                      uint64_t data_fingerprint, const TokenizedSplit& train,
                      const TokenizedSplit& test);

// The cache at `path` if it exists, is intact, has the current version and both
// fingerprints match. Otherwise nullopt, with the reason in *why ("" when there is no file).
std::optional<TokenCache> load_token_cache(const std::filesystem::path& path,
                                           uint64_t tokenizer_fingerprint,
                                           uint64_t data_fingerprint, std::string* why = nullptr);

}  // namespace mase::data
