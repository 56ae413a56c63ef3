// tests/data/test_wordpiece.cpp — WordPiece: basic tokenization and greedy longest-match on a
// hand-made vocabulary (expected pieces worked out by hand), errors, and equality with
// HuggingFace's BertTokenizer on real reviews and edge strings (tests/fixtures/wordpiece_hf.bin,
// made by tests/fixtures/gen_wordpiece.py).
#include <cstring>
#include <map>

#include "data/bert_basic.h"
#include "data/imdb.h"
#include "data/io.h"
#include "data/wordpiece.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

namespace test_wordpiece {

namespace {
using Strings = std::vector<std::string>;
using Ids = std::vector<int32_t>;

// clang-format off
// ids:           0        1        2        3        4         5     6        7         8      9
Strings kVocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "a",
                  "##a",   "the",   "cafe",  ",",     "!",      "中", "##s",   "film",   "é",   "##ff"};
// ids:           10       11       12       13       14        15    16       17        18     19
// clang-format on
}  // namespace

TEST_CASE("wordpiece: basic tokenization cleans lower-cases strips accents and splits") {
  CHECK(basic_tokenize("Hello, World!") == Strings{"hello", ",", "world", "!"});
  CHECK(basic_tokenize("don't") == Strings{"don", "'", "t"});
  CHECK(basic_tokenize("Ünïcödé  CAFÉ") == Strings{"unicode", "cafe"});  // NFD, drop Mn, lower
  CHECK(basic_tokenize("a\tb\nc\u3000d\u00a0e") == Strings{"a", "b", "c", "d", "e"});  // spaces
  CHECK(basic_tokenize("a\001b\u200bc\u00adD\177") == Strings{"abcd"});  // Cc and Cf dropped
  CHECK(basic_tokenize("\xEF\xBF\xBDok") == Strings{"ok"});              // U+FFFD dropped
  CHECK(basic_tokenize("中文abc") == Strings{"中", "文", "abc"});        // CJK split
  CHECK(basic_tokenize("x\u2014y\u00bfz") == Strings{"x", "\u2014", "y", "\u00bf", "z"});  // Pd, Po
  CHECK(basic_tokenize("\u03a3\u039f\u03a6\u039f\u03a3") ==
        Strings{"\u03c3\u03bf\u03c6\u03bf\u03c3"});
  CHECK(basic_tokenize("\u0130") == Strings{"i"});  // İ = I + U+0307 (Mn): the dot goes
  CHECK(basic_tokenize("\ud55c") == Strings{"\u1112\u1161\u11ab"});  // 한 -> its three jamo
  // An emoji is So (a symbol), not punctuation: it stays a word.
  CHECK(basic_tokenize("emoji \U0001F600!") == Strings{"emoji", "\U0001F600", "!"});
  CHECK(basic_tokenize("  \t\n ").empty());
}

TEST_CASE("wordpiece: greedy longest-match on a hand-made vocabulary") {
  WordPiece wp(kVocab, "test vocab");
  CHECK(wp.special().pad == 0);
  CHECK(wp.special().unk == 1);
  CHECK(wp.special().cls == 2);
  CHECK(wp.special().sep == 3);
  CHECK(wp.special().mask == 4);
  CHECK(wp.vocab_size() == 20);
  // "unaffable": "un" is the longest start piece; then "aff" (not "a"), then "able".
  CHECK(wp.encode("unaffable") == Ids{2, 5, 6, 7, 3});
  CHECK(wp.tokenize("Affable!") == Strings{"aff", "##able", "!"});
  CHECK(wp.tokenize("aaa") == Strings{"a", "##a", "##a"});
  CHECK(wp.tokenize("films") == Strings{"film", "##s"});
  CHECK(wp.tokenize("unxyz") == Strings{"[UNK]"});  // no piece for "xyz": the WHOLE word is unknown
  CHECK(wp.encode("The CAFÉ, the café!", false) == Ids{11, 12, 13, 11, 12, 14});
  CHECK(wp.encode("中文", false) == Ids{15, 1});
  CHECK(wp.encode("é", false) == Ids{1});  // accents are stripped first: "e" is not in the vocab
  CHECK(wp.encode(std::string("ca\0fe ca\u200bfe", 13), false) == Ids{12, 12});  // NUL, ZWSP
  CHECK(wp.encode("ca\u00a0fe", false) == Ids{1, 1});  // NBSP splits: "ca", "fe" unknown
  CHECK(wp.encode("") == Ids{2, 3});
  // 100 characters are one word of 100 pieces; 101 are [UNK].
  CHECK(wp.encode(std::string(100, 'a'), false).size() == 100);
  CHECK(wp.encode(std::string(101, 'a'), false) == Ids{1});
  CHECK(wp.decode(Ids{2, 5, 6, 7, 13, 11, 12, 3, 0, 0}) == "unaffable , the cafe");
}

TEST_CASE("wordpiece: a 1 MB review encodes in linear time") {
  WordPiece wp(kVocab);
  std::string text;
  while (text.size() < (1 << 20)) text += "the cafe films ";  // 15 bytes -> 4 ids
  Ids ids = wp.encode(text);
  CHECK(ids.size() == text.size() / 15 * 4 + 2);
  CHECK(ids[1] == 11);
  CHECK(ids[ids.size() - 2] == 16);  // ##s
}

TEST_CASE("wordpiece: vocabulary errors and save-load") {
  CHECK(error_message([] {
          WordPiece({"a", "[UNK]", "b"}, "v.txt");
        }) ==
        "[wordpiece] expected [PAD], [UNK], [CLS] and [SEP] in v.txt, got no [PAD], [CLS], [SEP] "
        "(is this a BERT WordPiece vocab.txt?)");
  TempDir tmp;
  CHECK_THROWS_AS(WordPiece::load(tmp / "missing.txt"), IoError);
  write_bytes(tmp / "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhello\r\n");
  auto crlf = WordPiece::load(tmp / "crlf.txt");
  CHECK(crlf->encode("Hello") == Ids{2, 4, 3});

  WordPiece wp(kVocab);
  wp.save(tmp / "vocab.txt");
  CHECK(list_files(tmp.path) == Strings{"crlf.txt", "vocab.txt"});  // no temp file left
  auto back = load_tokenizer(tmp / "vocab.txt");
  CHECK(back->name() == "wordpiece");
  CHECK(back->fingerprint() == wp.fingerprint());
  CHECK(back->encode("unaffable films") == wp.encode("unaffable films"));
  Strings other = kVocab;
  other[17] = "movie";
  CHECK(WordPiece(other).fingerprint() != wp.fingerprint());
  CHECK_THROWS_AS(wp.decode(Ids{20}), ConfigError);
}

// ---- equality with HuggingFace ------------------------------------------------------------

namespace {
struct HfEntry {
  int kind = 0;     // 0 = archive member name, 1 = literal text
  std::string key;  // the name or the text
  Ids ids;
};

std::vector<HfEntry> read_hf_fixture(uint64_t& vocab_hash) {
  std::string b = read_file(MASE_FIXTURES_DIR "/wordpiece_hf.bin", "test");
  REQUIRE(b.compare(0, 8, "MASEWPF1") == 0);
  size_t pos = 8;
  auto get = [&](size_t n) {
    REQUIRE(pos + n <= b.size());
    uint64_t v = 0;
    std::memcpy(&v, b.data() + pos, n);  // little-endian, as written by gen_wordpiece.py
    pos += n;
    return v;
  };
  vocab_hash = get(8);
  std::vector<HfEntry> out(get(4));
  for (HfEntry& e : out) {
    e.kind = static_cast<int>(get(1));
    size_t n = get(4);
    REQUIRE(pos + n <= b.size());
    e.key = b.substr(pos, n);
    pos += n;
    e.ids.resize(get(4));
    for (int32_t& id : e.ids) id = static_cast<int32_t>(get(2));
  }
  CHECK(pos == b.size());
  return out;
}

std::unique_ptr<WordPiece> bert_vocab(uint64_t expected_hash) {
  fs::path vocab = shared_file("bert-uncased-vocab/vocab.txt");
  if (vocab.empty()) return nullptr;
  REQUIRE_MESSAGE(fnv1a(read_file(vocab, "test")) == expected_hash,
                  "vocab.txt differs from the one gen_wordpiece.py used");
  return WordPiece::load(vocab);
}

// Both id lists as pieces, for a readable failure.
std::string pieces(const WordPiece& wp, const Ids& ids) {
  std::string s;
  for (int32_t i : ids) s += wp.token(i) + " ";
  return s;
}
}  // namespace

TEST_CASE("wordpiece: edge strings equal HuggingFace BertTokenizer") {
  uint64_t hash = 0;
  std::vector<HfEntry> entries = read_hf_fixture(hash);
  auto wp = bert_vocab(hash);
  if (!wp) return;
  int n = 0;
  for (const HfEntry& e : entries) {
    if (e.kind != 1) continue;
    Ids got = wp->encode(e.key);
    INFO("text: " << e.key << "\n  hf:   " << pieces(*wp, e.ids)
                  << "\n  mase: " << pieces(*wp, got));
    CHECK(got == e.ids);
    ++n;
  }
  CHECK(n >= 20);
}

TEST_CASE("wordpiece: real reviews equal HuggingFace BertTokenizer token for token") {
  uint64_t hash = 0;
  std::vector<HfEntry> entries = read_hf_fixture(hash);
  auto wp = bert_vocab(hash);
  fs::path archive = shared_file("imdb/aclImdb_v1.tar.gz");
  if (!wp || archive.empty()) return;
  Imdb imdb = read_imdb_archive(archive);
  std::map<std::string, const Review*> by_name;
  for (const auto* split : {&imdb.train, &imdb.test}) {
    for (const Review& r : *split) {
      by_name[cat("aclImdb/", split == &imdb.train ? "train" : "test", "/", r.label ? "pos" : "neg",
                  "/", r.id, "_", r.rating, ".txt")] = &r;
    }
  }
  int n = 0;
  int64_t ids = 0;
  for (const HfEntry& e : entries) {
    if (e.kind != 0) continue;
    auto it = by_name.find(e.key);
    REQUIRE_MESSAGE(it != by_name.end(), e.key);
    Ids got = wp->encode(it->second->text);
    INFO(e.key << "\n  hf:   " << pieces(*wp, e.ids) << "\n  mase: " << pieces(*wp, got));
    CHECK(got == e.ids);
    ++n;
    ids += static_cast<int64_t>(got.size());
  }
  CHECK(n >= 250);
  MESSAGE("compared " << n << " reviews, " << ids << " ids");
}

// HF's tokenizers library classifies characters with Unicode 8.0 tables (the Rust crate
// unicode_categories); utf8proc has Unicode 15. Comparing every code point once (HF on
// "a" + c + "b" against encode, for all 1,112,063 of them) found 824 that differ, all
// assigned or re-categorised after Unicode 8.0; we follow current Unicode for those.
// Emoji are not among them: new or old, they are So, which both treat as letters.
TEST_CASE("wordpiece: characters newer than Unicode 8 follow Unicode 15") {
  // U+061D ARABIC END OF TEXT MARK, Po since Unicode 14: punctuation (HF: part of the word).
  CHECK(basic_tokenize("a\u061Db") == Strings{"a", "\u061D", "b"});
  // U+08E2 ARABIC DISPUTED END OF AYAH, Cf since Unicode 9: dropped (HF: part of the word).
  CHECK(basic_tokenize("a\u08E2b") == Strings{"ab"});
  // U+1F923 ROLLING ON THE FLOOR LAUGHING (Unicode 9) and U+1FAE0 MELTING FACE (Unicode 14):
  // So, a letter for both.
  CHECK(basic_tokenize("a\U0001F923b \U0001FAE0") == Strings{"a\U0001F923b", "\U0001FAE0"});
}

}  // namespace test_wordpiece
