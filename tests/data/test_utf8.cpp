// tests/data/test_utf8.cpp — sanitize_utf8 against Python's bytes.decode("utf-8", "replace")
// (values below were checked with it) and the code point helpers.
#include "data/utf8.h"
#include "helpers.h"

using namespace mase::data;

namespace {
// The code points of sanitize_utf8(bytes), via next_codepoint.
std::vector<uint32_t> decode(const std::string& bytes, int64_t* replaced = nullptr) {
  std::string out;
  int64_t r = sanitize_utf8(bytes, out);
  if (replaced) *replaced = r;
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < out.size();) cps.push_back(next_codepoint(out, i));
  return cps;
}
}  // namespace

TEST_CASE("utf8: valid text passes through unchanged") {
  std::string s = "plain ASCII, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80, \xF4\x8F\xBF\xBF";
  std::string out;
  CHECK(sanitize_utf8(s, out) == 0);
  CHECK(out == s);
  CHECK(decode("\xE2\x82\xAC") == std::vector<uint32_t>{0x20AC});
  CHECK(decode("\xF0\x9F\x98\x80") == std::vector<uint32_t>{0x1F600});
}

TEST_CASE("utf8: ill-formed sequences become one U+FFFD per maximal subpart") {
  int64_t r = 0;
  // Python: b'\xc3('.decode('utf-8','replace') == '\ufffd('  (bad second byte)
  CHECK(decode("\xC3(", &r) == std::vector<uint32_t>{0xFFFD, '('});
  CHECK(r == 1);
  // b'a\xe2\x82' -> 'a\ufffd'  (a 3-byte sequence cut after 2: one replacement)
  CHECK(decode("a\xE2\x82", &r) == std::vector<uint32_t>{'a', 0xFFFD});
  // b'\xf0\x9f\x98' -> '\ufffd'  (a cut emoji)
  CHECK(decode("\xF0\x9F\x98") == std::vector<uint32_t>{0xFFFD});
  // b'\xed\xa0\x80' -> 3 x '\ufffd'  (a surrogate: ED may only be followed by 80..9F)
  CHECK(decode("\xED\xA0\x80", &r) == std::vector<uint32_t>{0xFFFD, 0xFFFD, 0xFFFD});
  CHECK(r == 3);
  // b'\xc0\xaf' -> 2 x '\ufffd'  (overlong '/': C0 never starts a sequence)
  CHECK(decode("\xC0\xAF") == std::vector<uint32_t>{0xFFFD, 0xFFFD});
  // b'\xff' -> '\ufffd'; b'\xf4\x90\x80\x80' (> U+10FFFF) -> 4 x '\ufffd'
  CHECK(decode("\xFF") == std::vector<uint32_t>{0xFFFD});
  CHECK(decode("\xF4\x90\x80\x80") == std::vector<uint32_t>{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD});
  // b'\xf0\x9f\x98\x80x\x80' -> '\U0001f600x\ufffd'  (a lone continuation byte)
  CHECK(decode("\xF0\x9F\x98\x80x\x80", &r) == std::vector<uint32_t>{0x1F600, 'x', 0xFFFD});
  CHECK(r == 1);
}

TEST_CASE("utf8: append_utf8 inverts next_codepoint at every length boundary") {
  for (uint32_t c : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFDu, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    append_utf8(s, c);
    size_t i = 0;
    CHECK(next_codepoint(s, i) == c);
    CHECK(i == s.size());
    std::string out;
    CHECK(sanitize_utf8(s, out) == 0);  // what we encode is valid
  }
}
