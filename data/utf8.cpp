// data/utf8.cpp — sanitize_utf8: bytes to valid UTF-8 with U+FFFD for ill-formed sequences.
//
// Well-formed sequences (Unicode Table 3-7): the lead byte fixes the length and the allowed
// range of the SECOND byte (which is where overlong forms, surrogates and > U+10FFFF are
// excluded); later bytes are always 80..BF.
//   lead      length  second byte      lead      length  second byte
//   00..7F    1       -                ED        3       80..9F  (no surrogates)
//   C2..DF    2       80..BF           EE..EF    3       80..BF
//   E0        3       A0..BF           F0        4       90..BF  (no overlongs)
//   E1..EC    3       80..BF           F1..F3    4       80..BF
//                                      F4        4       80..8F  (<= U+10FFFF)
// Lead bytes 80..C1 and F5..FF never start a sequence. On a bad byte at position k of a
// sequence, the k bytes before it (the maximal subpart) become ONE U+FFFD and decoding
// resumes AT the bad byte. So "\xF0\x9F\x98" (a cut emoji) is one U+FFFD, "\xC0\xAF" is two.
#include "data/utf8.h"

namespace mase::data {

Utf8Prefix utf8_prefix(std::string_view in, size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  const unsigned char lead = s[i];
  if (lead < 0x80) return {1, 1};
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  // The rows of the table in the header comment.
  // clang-format off
  if (lead >= 0xC2 && lead <= 0xDF) len = 2;
  else if (lead == 0xE0)                 { len = 3; lo = 0xA0; }
  else if (lead >= 0xE1 && lead <= 0xEC) len = 3;
  else if (lead == 0xED)                 { len = 3; hi = 0x9F; }
  else if (lead >= 0xEE && lead <= 0xEF) len = 3;
  else if (lead == 0xF0)                 { len = 4; lo = 0x90; }
  else if (lead >= 0xF1 && lead <= 0xF3) len = 4;
  else if (lead == 0xF4)                 { len = 4; hi = 0x8F; }
  // clang-format on
  int ok = len == 0 ? 0 : 1;  // bytes of a valid prefix seen so far
  while (ok > 0 && ok < len && i + ok < n) {
    const unsigned char c = s[i + ok];
    const bool good = ok == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!good) break;
    ++ok;
  }
  return {len, ok};
}

int64_t sanitize_utf8(std::string_view in, std::string& out) {
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  out.reserve(out.size() + n);
  int64_t replaced = 0;
  size_t i = 0;
  while (i < n) {
    // Fast path: copy a run of ASCII bytes at once (almost all of IMDb).
    size_t j = i;
    while (j < n && s[j] < 0x80) ++j;
    out.append(in.data() + i, j - i);
    i = j;
    if (i >= n) break;

    const Utf8Prefix p = utf8_prefix(in, i);
    if (p.well_formed()) {
      out.append(in.data() + i, p.len);
      i += p.len;
    } else {
      append_utf8(out, kReplacementChar);
      ++replaced;
      i += p.ok > 0 ? p.ok : 1;  // the maximal subpart, or the one byte that starts nothing
    }
  }
  return replaced;
}

}  // namespace mase::data
