// tests/data/test_token_cache.cpp — the token-id cache: round trips (u16 and u32 ids), every
// reason a cache is refused (fingerprints, version, corruption, truncation), atomic writes,
// and load_imdb reusing, invalidating and rebuilding it on a made-up dataset.
#include <cstring>

#include "data/dataset.h"
#include "data/io.h"
#include "data/token_cache.h"
#include "data/wordpiece.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

namespace test_token_cache {

namespace {
using Ids = std::vector<int32_t>;

TokenizedSplit split(std::initializer_list<std::pair<Ids, int32_t>> seqs) {
  TokenizedSplit s;
  for (const auto& [ids, label] : seqs) s.push_back(ids, label);
  return s;
}

// Rewrites the trailing checksum after a deliberate edit, so only the edit is detected.
void fix_checksum(std::string& bytes) {
  uint64_t h = fnv1a(std::string_view(bytes).substr(0, bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
}

// load_imdb options for data in tmp/data, the cache in tmp/<cache>, a WordPiece vocabulary
// at tmp/vocab.txt, and notes collected into `notes`.
ImdbOptions options(const TempDir& tmp, const std::string& cache, std::vector<std::string>& notes) {
  ImdbOptions opt;
  opt.data_dir = (tmp / "data").string();
  opt.cache_dir = (tmp / cache).string();
  opt.vocab = (tmp / "vocab.txt").string();
  opt.note = [&notes](const std::string& s) { notes.push_back(s); };
  return opt;
}

const std::vector<std::string> kVocab = {"[PAD]", "[UNK]", "[CLS]",    "[SEP]", "the", "film",
                                         "was",   "great", "terrible", ".",     "!",   ","};
}  // namespace

TEST_CASE("token cache: round trip with 16-bit and 32-bit ids") {
  TempDir tmp;
  TokenizedSplit train = split({{{2, 4, 5, 3}, 1}, {{2, 3}, 0}, {{2, 65535, 3}, 1}});
  TokenizedSplit test = split({{{2, 7, 7, 7, 3}, 0}});
  save_token_cache(tmp / "a.tokens", 11, 22, train, test);
  auto c = load_token_cache(tmp / "a.tokens", 11, 22);
  REQUIRE(c);
  CHECK(c->train == train);
  CHECK(c->test == test);
  // 64-byte header + offsets (4 + 2) * 8 + labels 3 + 1 + ids (9 + 5) * 2 + checksum 8.
  CHECK(fs::file_size(tmp / "a.tokens") == 64 + 48 + 4 + 28 + 8);
  CHECK(list_files(tmp.path) == std::vector<std::string>{"a.tokens"});  // no temp file left

  TokenizedSplit wide = split({{{2, 65536, 100000, 3}, 1}});  // ids over 16 bits: 4 bytes each
  save_token_cache(tmp / "b.tokens", 1, 2, wide, TokenizedSplit{});
  auto w = load_token_cache(tmp / "b.tokens", 1, 2);
  REQUIRE(w);
  CHECK(w->train == wide);
  CHECK(w->test.size() == 0);
  CHECK(fs::file_size(tmp / "b.tokens") == 64 + (2 + 1) * 8 + 1 + 4 * 4 + 8);
}

TEST_CASE("token cache: a label of 128 or more comes back as saved") {
  TempDir tmp;  // labels are u8 on disk; read through a (signed) char, 200 came back as -56
  TokenizedSplit train = split({{{2, 3}, 200}, {{2, 4, 3}, 255}, {{2, 3}, 127}});
  save_token_cache(tmp / "a.tokens", 1, 2, train, TokenizedSplit{});
  auto c = load_token_cache(tmp / "a.tokens", 1, 2);
  REQUIRE(c);
  CHECK(c->train.labels == Ids{200, 255, 127});
}

TEST_CASE("data: reading a folder as a file is an IoError, not std::bad_alloc") {
  TempDir tmp;  // an ifstream opens a folder, and its size reads as 2^63 - 1
  fs::create_directories(tmp / "vocab.txt");
  fs::create_directories(tmp / "tok.model");
  CHECK_THROWS_WITH_AS(read_file(tmp / "vocab.txt", "wordpiece"),
                       ("[wordpiece] cannot read " + (tmp / "vocab.txt").string() +
                        ": expected a file, got a folder").c_str(),
                       IoError);
  CHECK_THROWS_AS(load_tokenizer(tmp / "vocab.txt"), IoError);
  CHECK_THROWS_AS(load_tokenizer(tmp / "tok.model"), IoError);
  CHECK_FALSE(load_token_cache(tmp / "vocab.txt", 1, 2));  // not a cache: rebuilt, no error
}

TEST_CASE("token cache: stale corrupt or foreign files are refused with a reason") {
  TempDir tmp;
  TokenizedSplit train = split({{{2, 4, 5, 3}, 1}, {{2, 3}, 0}});
  save_token_cache(tmp / "c.tokens", 11, 22, train, train);
  std::string why;
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 12, 22, &why));
  CHECK(why == "it was built with another tokenizer");
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 23, &why));
  CHECK(why == "it was built from other data");
  CHECK_FALSE(load_token_cache(tmp / "none.tokens", 11, 22, &why));
  CHECK(why.empty());  // no file is not worth a note

  const std::string good = read_bytes(tmp / "c.tokens");
  std::string bytes = good;
  bytes[70] ^= 0x01;  // one flipped bit in the offsets
  write_bytes(tmp / "c.tokens", bytes);
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 22, &why));
  CHECK(why == "checksum mismatch (truncated or corrupt file)");

  write_bytes(tmp / "c.tokens", good.substr(0, good.size() - 5));
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 22, &why));
  CHECK(why == "checksum mismatch (truncated or corrupt file)");

  bytes = good;
  bytes[8] = 99;  // format version 99, checksum made valid again
  fix_checksum(bytes);
  write_bytes(tmp / "c.tokens", bytes);
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 22, &why));
  CHECK(why == "format version 99, this build reads version 1");

  bytes = good;
  bytes[32] = 100;  // train review count 100: the sizes no longer add up
  fix_checksum(bytes);
  write_bytes(tmp / "c.tokens", bytes);
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 22, &why));
  CHECK(why == "sizes in the header do not match the file size");

  write_bytes(tmp / "c.tokens", "hello");
  CHECK_FALSE(load_token_cache(tmp / "c.tokens", 11, 22, &why));
  CHECK(why == "not a mase token cache (bad magic or too short)");
}

TEST_CASE("token cache: a failed write leaves no file behind") {
  TempDir tmp;
  fs::create_directories(tmp / "taken/child");  // a non-empty folder where the file should go
  TokenizedSplit s = split({{{2, 3}, 0}});
  CHECK_THROWS_AS(save_token_cache(tmp / "taken", 1, 2, s, s), IoError);
  CHECK(list_files(tmp.path).empty());
}

TEST_CASE("token cache: load_imdb builds reuses and invalidates it") {
  TempDir tmp;
  write_imdb_tarball(tmp / "data/imdb/aclImdb_v1.tar.gz", made_up_reviews());
  WordPiece(kVocab).save(tmp / "vocab.txt");
  std::vector<std::string> notes;
  ImdbOptions opt = options(tmp, "cache", notes);

  ImdbData first = load_imdb(opt);
  CHECK_FALSE(first.from_cache);
  CHECK(first.cache_path == tmp / "cache/imdb-wordpiece-12.tokens");
  CHECK(first.train.size() == 6);
  CHECK(first.test.size() == 4);
  // train/neg/0_2.txt "Terrible plot.<br />Boring." -> [CLS] terrible [UNK] . [UNK] . [SEP]
  CHECK(first.train.sequence(0).size() == 7);
  CHECK(Ids(first.train.sequence(0).begin(), first.train.sequence(0).end()) ==
        Ids{2, 8, 1, 9, 1, 9, 3});
  CHECK(notes.empty());

  ImdbData second = load_imdb(opt);
  CHECK(second.from_cache);
  CHECK(second.read_stats.reviews == 0);  // the reviews were not even read
  CHECK(second.train == first.train);
  CHECK(second.test == first.test);

  // Another vocabulary of the same size: same file name, other fingerprint -> rebuilt.
  std::vector<std::string> other = kVocab;
  other[8] = "awful";
  WordPiece(other).save(tmp / "vocab.txt");
  ImdbData third = load_imdb(opt);
  CHECK_FALSE(third.from_cache);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        cat("rebuilding ", third.cache_path.string(), ": it was built with another tokenizer"));
  CHECK(third.train.sequence(0)[1] == 1);  // "terrible" is now [UNK]

  // Changed data (one more review in the archive) -> rebuilt.
  auto files = made_up_reviews();
  files.push_back({"test/pos/9_9.txt", "Great film!"});
  write_imdb_tarball(tmp / "data/imdb/aclImdb_v1.tar.gz", files);
  ImdbData fourth = load_imdb(opt);
  CHECK_FALSE(fourth.from_cache);
  CHECK(notes.back() ==
        cat("rebuilding ", third.cache_path.string(), ": it was built from other data"));
  CHECK(fourth.test.size() == 5);

  // A corrupt cache is rebuilt, and the rebuilt one is good.
  std::string bytes = read_bytes(fourth.cache_path);
  bytes[100] ^= 0x40;
  write_bytes(fourth.cache_path, bytes);
  CHECK_FALSE(load_imdb(opt).from_cache);
  CHECK(notes.back().find("checksum mismatch") != std::string::npos);
  CHECK(load_imdb(opt).from_cache);
}

TEST_CASE("token cache: an unwritable cache folder is a note not an error") {
  TempDir tmp;
  write_imdb_folder(tmp / "data/imdb", made_up_reviews());
  WordPiece(kVocab).save(tmp / "vocab.txt");
  // a folder under a file: it cannot be created, so nothing can be written (root or not)
  write_bytes(tmp / "file", "x");
  std::vector<std::string> notes;
  ImdbOptions opt = options(tmp, "file/cache", notes);
  ImdbData d = load_imdb(opt);
  CHECK(d.source == tmp / "data/imdb/aclImdb");  // the extracted folder
  CHECK(d.train.size() == 6);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("token cache not saved") == 0);
  // the "folder" itself a file is the user's mistake, not a cache to do without: refused
  ImdbOptions on_file = options(tmp, "file", notes);
  CHECK_THROWS_WITH_AS(load_imdb(on_file), doctest::Contains("[--cache-dir] expected a folder"),
                       ConfigError);
}

TEST_CASE("token cache: load_imdb trains sentencepiece once then reuses the model") {
  TempDir tmp;
  auto files = made_up_reviews();
  for (int i = 0; i < 60; ++i) {  // enough text for a 40-piece model
    files.push_back(
        {cat("train/pos/", 100 + i, "_8.txt"), "A great film with great music and a great story."});
    files.push_back({cat("train/neg/", 100 + i, "_2.txt"),
                     "A terrible film with a boring plot and bad acting."});
  }
  write_imdb_tarball(tmp / "data/imdb/aclImdb_v1.tar.gz", files);
  std::vector<std::string> notes;
  ImdbOptions opt;
  opt.data_dir = (tmp / "data").string();
  opt.tokenizer = "sentencepiece";
  opt.sentencepiece.vocab_size = 40;
  opt.sentencepiece.threads = 1;
  opt.note = [&](const std::string& s) { notes.push_back(s); };
  ImdbData first = load_imdb(opt);
  CHECK(first.train_tokenizer_seconds > 0);
  CHECK(first.tokenizer->vocab_size() == 40);
  // the cache defaults to $MASE_CACHE_DIR/imdb (tests/main.cpp sets it), never the data folder
  CHECK(first.tokenizer_path.parent_path() == fs::path(std::getenv("MASE_CACHE_DIR")) / "imdb");
  CHECK(mase::test::list_files(tmp / "data") == std::vector<std::string>{"imdb/aclImdb_v1.tar.gz"});
  CHECK(first.tokenizer_path.filename().string().find("imdb-sentencepiece-unigram-40-") == 0);
  CHECK(fs::exists(first.tokenizer_path));
  CHECK(first.train.sequence(0).front() == 2);  // [CLS]
  ImdbData second = load_imdb(opt);
  CHECK(second.train_tokenizer_seconds == 0);  // loaded, not retrained
  CHECK(second.from_cache);
  CHECK(second.train == first.train);
  CHECK(notes.size() == 2);  // "training …" and "saved …", once
}

TEST_CASE("token cache: bad tokenizer options are ConfigErrors") {
  TempDir tmp;
  write_imdb_folder(tmp / "data/imdb", made_up_reviews());
  ImdbOptions opt;
  opt.data_dir = (tmp / "data").string();
  opt.tokenizer = "bpe";
  CHECK(error_message([&] { load_imdb(opt); }) ==
        "[data] expected --tokenizer wordpiece or sentencepiece, got 'bpe'");
  opt.tokenizer = "wordpiece";  // no --vocab and none in the data folder
  CHECK(error_message([&] { load_imdb(opt); }) ==
        cat("[data] expected a WordPiece vocab.txt at ",
            (tmp / "data/bert-uncased-vocab/vocab.txt").string(),
            ", got nothing there (pass --vocab FILE, e.g. the vocab.txt of bert-base-uncased)"));
  CHECK_THROWS_AS(load_imdb(opt), ConfigError);
}

TEST_CASE("data: a split with one class only is warned about") {
  TokenizedSplit both, pos_only;
  const std::vector<int32_t> seq{2, 3};
  both.push_back(seq, 0);
  both.push_back(seq, 1);
  pos_only.push_back(seq, 1);
  CHECK(one_class_warning(both, "test") == "");
  CHECK(one_class_warning(TokenizedSplit{}, "test") == "");
  CHECK(one_class_warning(pos_only, "test") ==
        "[data] warning: the test split has 1 positive and 0 negative reviews: its accuracy "
        "measures one class only (is a pos/ or neg/ folder empty?)");
}

}  // namespace test_token_cache
