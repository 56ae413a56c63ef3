// data/wordpiece.cpp — WordPiece: vocabulary, greedy longest-match, encode/decode.
#include "data/wordpiece.h"

#include <algorithm>

#include "data/bert_basic.h"
#include "data/io.h"
#include "runtime/error.h"

namespace mase::data {

WordPiece::WordPiece(std::vector<std::string> tokens, std::string source)
    : tokens_(std::move(tokens)) {
  start_.reserve(tokens_.size());
  cont_.reserve(tokens_.size() / 4);
  uint64_t h = fnv1a("wordpiece-uncased-v1\n");  // bump when the algorithm changes
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    h = fnv1a(t + "\n", h);
    if (t.empty()) continue;
    // A repeated token maps to its LAST line, as in HF (a dict filled line by line).
    start_[t] = static_cast<int32_t>(i);
    max_start_bytes_ = std::max(max_start_bytes_, t.size());
    if (t.size() > 2 && t.compare(0, 2, "##") == 0) {
      cont_[t.substr(2)] = static_cast<int32_t>(i);
      max_cont_bytes_ = std::max(max_cont_bytes_, t.size() - 2);
    }
  }
  fingerprint_ = h;
  std::string missing;
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) {
    if (id(s) < 0) missing += (missing.empty() ? "" : ", ") + std::string(s);
  }
  MASE_CHECK(missing.empty(), IoError, "[wordpiece] expected [PAD], [UNK], [CLS] and [SEP] in ",
             source, ", got no ", missing, " (is this a BERT WordPiece vocab.txt?)");
  special_ = {id("[PAD]"), id("[UNK]"), id("[CLS]"), id("[SEP]"), id("[MASK]")};
}

std::unique_ptr<WordPiece> WordPiece::load(const std::filesystem::path& vocab_txt) {
  std::string bytes = read_file(vocab_txt, "wordpiece");
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos) nl = bytes.size();
    std::string line = bytes.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a vocab saved on Windows
    tokens.push_back(std::move(line));
    pos = nl + 1;
  }
  return std::make_unique<WordPiece>(std::move(tokens), vocab_txt.string());
}

int32_t WordPiece::id(std::string_view token) const {
  auto it = start_.find(token);
  return it == start_.end() ? -1 : it->second;
}

const std::string& WordPiece::token(int32_t id) const {
  MASE_CHECK(id >= 0 && id < vocab_size(), ConfigError, "[wordpiece] expected an id in [0, ",
             vocab_size(), "), got ", id);
  return tokens_[static_cast<size_t>(id)];
}

void WordPiece::encode_word(std::string_view word, int64_t chars, std::vector<int32_t>& out) const {
  if (chars > kMaxCharsPerWord) {
    out.push_back(special_.unk);
    return;
  }
  const size_t first = out.size();
  auto is_cont_byte = [&](size_t k) {
    return (static_cast<unsigned char>(word[k]) & 0xC0) == 0x80;
  };
  size_t start = 0;
  while (start < word.size()) {
    const Map& map = start == 0 ? start_ : cont_;
    // Longest candidate first: never longer than the longest key, and ending on a code
    // point boundary (a piece is whole characters).
    size_t end = std::min(word.size(), start + (start == 0 ? max_start_bytes_ : max_cont_bytes_));
    while (end > start && end < word.size() && is_cont_byte(end)) --end;
    int32_t found = -1;
    while (end > start) {
      auto it = map.find(word.substr(start, end - start));
      if (it != map.end()) {
        found = it->second;
        break;
      }
      do --end;
      while (end > start && is_cont_byte(end));
    }
    if (found < 0) {  // no piece fits: the whole word is unknown
      out.resize(first);
      out.push_back(special_.unk);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPiece::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4 + 2);  // ~4.5 bytes per token in English reviews
  if (add_special) ids.push_back(special_.cls);
  basic_tokenize(text, [&](std::string_view w, int64_t chars) { encode_word(w, chars, ids); });
  if (add_special) ids.push_back(special_.sep);
  return ids;
}

std::vector<std::string> WordPiece::tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  for (int32_t i : encode(text, false)) pieces.push_back(token(i));
  return pieces;
}

std::string WordPiece::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t i : ids) {
    if (i == special_.pad || i == special_.cls || i == special_.sep || i == special_.mask) continue;
    const std::string& t = token(i);
    if (t.size() > 2 && t.compare(0, 2, "##") == 0) {
      out.append(t, 2);
    } else {
      if (!out.empty()) out += ' ';
      out += t;
    }
  }
  return out;
}

void WordPiece::save(const std::filesystem::path& path) const {
  std::string bytes;
  for (const std::string& t : tokens_) bytes += t + "\n";
  write_text_atomic(path.string(), bytes);
}

}  // namespace mase::data
