// data/bert_basic.h — BERT's "basic tokenization": raw text -> lower-cased words.
//
// What BERT uncased does before WordPiece (HuggingFace tokenizers' BertNormalizer followed by
// BertPreTokenizer, which BertTokenizer uses), one code point at a time:
//   1. clean:   drop U+0000, U+FFFD and control characters (categories Cc, Cf, Co, Cs, but
//               not \t \n \r; unassigned code points, Cn, are kept); map whitespace (\t \n
//               \r and the White_Space characters that are not controls, e.g. U+00A0,
//               U+2028, U+3000) to a word break;
//   2. CJK:     put a word break before and after every CJK ideograph (BERT's fixed ranges);
//   3. accents: canonical decomposition (NFD), then drop nonspacing marks (Mn): é -> e;
//   4. lower:   Unicode simple lower-case mapping, one code point at a time (so "ΣΟΦΟΣ" ->
//               "σοφοσ", as HF does, with no final-sigma rule);
//   5. split:   break on whitespace; every punctuation character (ASCII !"#$%&'()*+,-./:;<=>?@
//               [\]^_`{|}~ and Unicode categories P*) becomes a word of its own.
// The Unicode tables are utf8proc's (Debian's libutf8proc). ASCII, nearly all of IMDb, never
// reaches them: a 128-entry table classifies it.
//
// Read next: wordpiece.h (what is done with each word).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mase::data {

// Calls on_word(std::string_view word, int64_t n_code_points) for each word of `text`
// (valid UTF-8) in order. The view is valid only during the call.
template <class F>
void basic_tokenize(std::string_view text, F&& on_word);

// The words as strings (tests and debugging; the tokenizer uses the callback form).
std::vector<std::string> basic_tokenize(std::string_view text);

namespace detail {
// What step 1-5 do with one code point.
enum class CharClass : uint8_t { kSkip, kSpace, kPunct, kCjk, kWord };
CharClass classify(char32_t c);
// Appends the accent-stripped, lower-cased form of c (steps 3-4) to out, as code points.
void normalize_char(char32_t c, std::vector<char32_t>& out);
bool is_punctuation(char32_t c);
// Class and lower-case of ASCII: the fast path.
struct AsciiTable {
  CharClass cls[128];
  char lower[128];
};
constexpr AsciiTable make_ascii() {
  AsciiTable t{};
  for (int c = 0; c < 128; ++c) {
    t.lower[c] = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (c == '\t' || c == '\n' || c == '\r' || c == ' ')
      t.cls[c] = CharClass::kSpace;
    else if (c < 32 || c == 127)
      t.cls[c] = CharClass::kSkip;  // NUL and the other controls
    else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
             (c >= 123 && c <= 126))
      t.cls[c] = CharClass::kPunct;
    else
      t.cls[c] = CharClass::kWord;
  }
  return t;
}
inline constexpr AsciiTable kAscii = make_ascii();
}  // namespace detail

}  // namespace mase::data

#include "data/utf8.h"

namespace mase::data {

template <class F>
void basic_tokenize(std::string_view text, F&& on_word) {
  using detail::CharClass;
  std::string word;
  int64_t chars = 0;
  std::vector<char32_t> norm;
  auto flush = [&] {
    if (!word.empty()) on_word(std::string_view(word), chars);
    word.clear();
    chars = 0;
  };
  auto single = [&](char32_t c) {  // a one-character word (punctuation, CJK)
    flush();
    append_utf8(word, c);
    chars = 1;
    flush();
  };
  for (size_t i = 0; i < text.size();) {
    char32_t c = next_codepoint(text, i);
    if (c < 128) {
      switch (detail::kAscii.cls[c]) {
        case CharClass::kSkip:
          break;
        case CharClass::kSpace:
          flush();
          break;
        case CharClass::kPunct:
          single(c);
          break;
        default:
          word += detail::kAscii.lower[c];
          ++chars;
          break;
      }
      continue;
    }
    CharClass cls = detail::classify(c);
    if (cls == CharClass::kSkip) continue;
    if (cls == CharClass::kSpace) {
      flush();
      continue;
    }
    if (cls == CharClass::kCjk) flush();
    norm.clear();
    detail::normalize_char(c, norm);
    for (char32_t n : norm) {
      if (detail::is_punctuation(n)) {
        single(n);
      } else {
        append_utf8(word, n);
        ++chars;
      }
    }
    if (cls == CharClass::kCjk) flush();
  }
  flush();
}

}  // namespace mase::data
