// data/bert_basic.cpp — the Unicode side of BERT's basic tokenization (see bert_basic.h).
#include "data/bert_basic.h"

#include <utf8proc.h>

namespace mase::data {
namespace detail {

namespace {

// HF's _is_chinese_char: the CJK Unified Ideographs blocks and their extensions. Hangul,
// kana and CJK punctuation are NOT in it (they go through WordPiece like other letters).
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Unicode's White_Space property (a stable list), as Rust's char::is_whitespace; \t \n \r
// and the other C0/C1 controls in it (U+000B, U+000C, U+0085) are handled before this.
bool is_unicode_space(char32_t c) {
  return c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

CharClass classify(char32_t c) {
  if (c < 128) return kAscii.cls[c];
  if (c == kReplacementChar) return CharClass::kSkip;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    // "Other": control, format (e.g. U+200B zero width space, U+00AD soft hyphen), private
    // use, surrogate; not unassigned (Cn), which is kept. U+0085 (NEL) is Cc, so it is
    // dropped, not a space.
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return CharClass::kSkip;
    default:
      break;
  }
  if (is_unicode_space(c)) return CharClass::kSpace;
  if (is_cjk(c)) return CharClass::kCjk;
  return CharClass::kWord;
}

bool is_punctuation(char32_t c) {
  if (c < 128) return kAscii.cls[c] == CharClass::kPunct;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

void normalize_char(char32_t c, std::vector<char32_t>& out) {
  // NFD of one code point: at most a handful of code points (Hangul syllables give 2-3).
  utf8proc_int32_t buf[8];
  utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 8,
                                               UTF8PROC_DECOMPOSE, nullptr);
  if (n < 0 || n > 8) {  // cannot happen for valid code points; keep the character as is
    buf[0] = static_cast<utf8proc_int32_t>(c);
    n = 1;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) {
    if (utf8proc_category(buf[k]) == UTF8PROC_CATEGORY_MN) continue;  // the accent
    out.push_back(static_cast<char32_t>(utf8proc_tolower(buf[k])));
  }
}

}  // namespace detail

std::vector<std::string> basic_tokenize(std::string_view text) {
  std::vector<std::string> words;
  basic_tokenize(text, [&](std::string_view w, int64_t) { words.emplace_back(w); });
  return words;
}

}  // namespace mase::data
