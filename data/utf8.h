// data/utf8.h — the few UTF-8 helpers the reader and the tokenizers need.
//
// Review files are bytes; everything after the reader works on valid UTF-8. sanitize_utf8
// is the one place where bytes become text: each ill-formed sequence becomes U+FFFD, one per
// "maximal subpart" (Unicode 15, §3.9, "U+FFFD Substitution of Maximal Subparts"), which is
// also what Python's bytes.decode("utf-8", "replace") does, so reference scripts agree with us.
// Read next: imdb.h (who calls it), wordpiece.h (who reads code points).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mase::data {

constexpr char32_t kReplacementChar = 0xFFFD;

// The sequence that starts at in[i], by Unicode's Table 3-7 (utf8.cpp): `len` bytes long (1 for
// ASCII; 0 when in[i] starts none) of which the first `ok` are well-formed (ok < len: the
// maximal subpart of an ill-formed one). Shared by sanitize_utf8 and by the tools' check that
// an error message or an input file is text (tools/cli.h).
struct Utf8Prefix {
  int len = 0, ok = 0;
  bool well_formed() const { return len > 0 && ok == len; }
};
Utf8Prefix utf8_prefix(std::string_view in, size_t i);

// Appends `in` to `out` with ill-formed sequences replaced by U+FFFD; returns how many
// replacements were made (0 for valid input). Example: "a\xC3(" -> "a\uFFFD(", returns 1.
int64_t sanitize_utf8(std::string_view in, std::string& out);

// The code point starting at s[i] of valid UTF-8 (as sanitize_utf8 produces); advances i.
// Ill-formed input gives some code point, never a read past the end: a lead byte whose
// sequence the string cuts short (found by fuzz/, a text given to predict) gives U+FFFD and
// ends the string.
inline char32_t next_codepoint(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[k])); };
  char32_t c = b(i);
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (const size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; i + len > s.size()) {
    i = s.size();
    return kReplacementChar;
  }
  if (c < 0xE0) {
    c = ((c & 0x1F) << 6) | (b(i + 1) & 0x3F);
    i += 2;
    return c;
  }
  if (c < 0xF0) {
    c = ((c & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
    i += 3;
    return c;
  }
  c = ((c & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
  i += 4;
  return c;
}

// Appends the UTF-8 encoding of code point c (c <= 0x10FFFF) to out.
inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace mase::data
