// data/token_cache.cpp — save_token_cache / load_token_cache (layout in token_cache.h).
#include "data/token_cache.h"

#include <algorithm>
#include <cstring>

#include "data/io.h"
#include "runtime/error.h"

namespace mase::data {
namespace {

constexpr char kMagic[8] = {'M', 'A', 'S', 'E', 'T', 'O', 'K', '\0'};
constexpr size_t kHeaderBytes = 64;

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads fixed-size values from a byte string, never past its end.
struct Reader {
  const std::string& bytes;
  size_t pos = 0;
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, bytes.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
};

uint32_t id_width(const TokenizedSplit& train, const TokenizedSplit& test) {
  int32_t max_id = 0;
  for (const TokenizedSplit* s : {&train, &test}) {
    for (int32_t id : s->ids) {
      MASE_CHECK(id >= 0, ConfigError, "[token-cache] expected ids >= 0, got ", id);
      max_id = std::max(max_id, id);
    }
  }
  return max_id < 65536 ? 2 : 4;
}

}  // namespace

void save_token_cache(const std::filesystem::path& path, uint64_t tokenizer_fp, uint64_t data_fp,
                      const TokenizedSplit& train, const TokenizedSplit& test) {
  const uint32_t width = id_width(train, test);
  std::string out;
  size_t total = kHeaderBytes + 8;
  for (const TokenizedSplit* s : {&train, &test}) {
    total += (s->offsets.size()) * 8 + s->labels.size() + s->ids.size() * width;
  }
  out.reserve(total);
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kTokenCacheVersion);
  put<uint32_t>(out, width);
  put<uint64_t>(out, tokenizer_fp);
  put<uint64_t>(out, data_fp);
  for (const TokenizedSplit* s : {&train, &test}) {
    put<uint64_t>(out, static_cast<uint64_t>(s->size()));
    put<uint64_t>(out, s->ids.size());
  }
  for (const TokenizedSplit* s : {&train, &test}) {
    for (int64_t o : s->offsets) put<uint64_t>(out, static_cast<uint64_t>(o));
    for (int32_t l : s->labels) {
      MASE_CHECK(l >= 0 && l < 256, ConfigError, "[token-cache] expected labels in [0, 256), got ",
                 l);
      put<uint8_t>(out, static_cast<uint8_t>(l));
    }
    for (int32_t id : s->ids) {
      if (width == 2)
        put<uint16_t>(out, static_cast<uint16_t>(id));
      else
        put<uint32_t>(out, static_cast<uint32_t>(id));
    }
  }
  put<uint64_t>(out, fnv1a(out));
  write_text_atomic(path.string(), out);
}

std::optional<TokenCache> load_token_cache(const std::filesystem::path& path, uint64_t tokenizer_fp,
                                           uint64_t data_fp, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<TokenCache> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return fail("");
  std::string bytes;
  try {
    bytes = read_file(path, "token-cache");
  } catch (const IoError& e) {
    return fail(e.what());
  }
  if (bytes.size() < kHeaderBytes + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return fail("not a mase token cache (bad magic or too short)");
  }
  Reader r{bytes, 8};
  uint32_t version = r.get<uint32_t>(), width = r.get<uint32_t>();
  if (version != kTokenCacheVersion) {
    return fail(cat("format version ", version, ", this build reads version ", kTokenCacheVersion));
  }
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != fnv1a(std::string_view(bytes).substr(0, bytes.size() - 8))) {
    return fail("checksum mismatch (truncated or corrupt file)");
  }
  TokenCache c;
  c.tokenizer_fingerprint = r.get<uint64_t>();
  c.data_fingerprint = r.get<uint64_t>();
  if (c.tokenizer_fingerprint != tokenizer_fp) return fail("it was built with another tokenizer");
  if (c.data_fingerprint != data_fp) return fail("it was built from other data");
  uint64_t n[2], n_ids[2];
  for (int s = 0; s < 2; ++s) {
    n[s] = r.get<uint64_t>();
    n_ids[s] = r.get<uint64_t>();
  }
  // Sizes must add up to the file size exactly before anything is allocated from them.
  if (width != 2 && width != 4) return fail(cat("bad id width ", width));
  unsigned __int128 expect = kHeaderBytes + 8;
  for (int s = 0; s < 2; ++s)
    expect += (unsigned __int128)(n[s] + 1) * 8 + n[s] + (unsigned __int128)n_ids[s] * width;
  if (expect != bytes.size()) return fail("sizes in the header do not match the file size");
  for (int s = 0; s < 2; ++s) {
    TokenizedSplit& sp = s == 0 ? c.train : c.test;
    sp.offsets.resize(n[s] + 1);
    std::memcpy(sp.offsets.data(), bytes.data() + r.pos, (n[s] + 1) * 8);
    r.pos += (n[s] + 1) * 8;
    // u8 on disk: through unsigned char, or a label >= 128 (which save accepts) comes back < 0
    const auto* labels = reinterpret_cast<const unsigned char*>(bytes.data()) + r.pos;
    sp.labels.assign(labels, labels + n[s]);
    r.pos += n[s];
    sp.ids.resize(n_ids[s]);
    const char* p = bytes.data() + r.pos;
    if (width == 2) {
      for (uint64_t i = 0; i < n_ids[s]; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        sp.ids[i] = v;
      }
    } else if (n_ids[s] > 0) {  // memcpy from/to nullptr is undefined even for 0 bytes
      std::memcpy(sp.ids.data(), p, n_ids[s] * 4);
    }
    r.pos += n_ids[s] * width;
    // Offsets must be a valid partition of the ids (the checksum makes this a sanity check).
    bool ok = sp.offsets.front() == 0 && sp.offsets.back() == static_cast<int64_t>(n_ids[s]);
    for (uint64_t i = 0; ok && i < n[s]; ++i) ok = sp.offsets[i] <= sp.offsets[i + 1];
    if (!ok) return fail("offsets out of order");
  }
  return c;
}

}  // namespace mase::data
