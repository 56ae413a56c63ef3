// tests/data/test_imdb.cpp — the IMDb reader on made-up reviews: folder and tarball, labels,
// "<br />", canonical order, skipped entries, and bad input (missing, truncated, not gzip,
// empty review, invalid UTF-8, oversized and duplicate files).
#include "data/imdb.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

namespace {
// "split/label/id_rating: text" of every review, in the reader's order.
std::vector<std::string> describe(const Imdb& d) {
  std::vector<std::string> out;
  for (const auto* split : {&d.train, &d.test}) {
    for (const Review& r : *split) {
      out.push_back(cat(split == &d.train ? "train" : "test", "/", r.label ? "pos" : "neg", "/",
                        r.id, "_", r.rating, ": ", r.text));
    }
  }
  return out;
}

const std::vector<std::string> kExpected = {
    // canonical order: per split, neg then pos, each by id; "<br />" -> " "
    "train/neg/0_2: Terrible plot. Boring.",
    "train/neg/5_4: Not good, not bad, mostly bad.",
    "train/neg/7_1: Awful. Just awful.",
    "train/pos/0_9: A wonderful film.  Loved it!",
    "train/pos/3_10: Best movie of the year.",
    "train/pos/12_7: Great acting, great story.",
    "test/neg/2_3: Meh.",
    "test/neg/4_1: The worst film I have seen.",
    "test/pos/0_10: A masterpiece!",
    "test/pos/1_8: Loved the music.",
};
}  // namespace

TEST_CASE("imdb: reads the official layout from a folder") {
  TempDir tmp;
  fs::path root = write_imdb_folder(tmp.path, made_up_reviews());
  Imdb d = read_imdb(root);
  CHECK(describe(d) == kExpected);
  CHECK(d.stats.reviews == 10);
  // Skipped: train/unsup/ (never opened), labeledBow.feat, urls_pos.txt, test/urls_neg.txt;
  // README and imdb.vocab sit above train/ and test/ and are never listed.
  CHECK(d.stats.ignored_entries == 4);
  CHECK(d.stats.empty == 0);
  CHECK(d.stats.invalid_utf8 == 0);
  // The folder that contains aclImdb/ works too.
  CHECK(describe(read_imdb(tmp.path)) == kExpected);
}

TEST_CASE("imdb: the tarball gives the same reviews as the folder") {
  TempDir tmp;
  write_imdb_tarball(tmp / "aclImdb_v1.tar.gz", made_up_reviews());
  Imdb d = read_imdb(tmp / "aclImdb_v1.tar.gz");
  CHECK(describe(d) == kExpected);
  // Entries skipped: README, imdb.vocab, unsup/0_0.txt, labeledBow.feat, 2 urls files.
  CHECK(d.stats.ignored_entries == 6);
  CHECK(d.stats.bytes == 38 + 26 + 23 + 27 + 18 + 30 + 16 + 14 + 4 + 27);  // raw file sizes
}

TEST_CASE("imdb: review paths") {
  ReviewPath rp;
  REQUIRE(parse_review_path("aclImdb/train/pos/123_8.txt", rp));
  CHECK(rp.split == "train");
  CHECK(rp.label == 1);
  CHECK(rp.id == 123);
  CHECK(rp.rating == 8);
  REQUIRE(parse_review_path("./test/neg/0_2.txt", rp));
  CHECK((rp.split == "test" && rp.label == 0 && rp.id == 0 && rp.rating == 2));
  for (const char* bad :
       {"aclImdb/train/unsup/0_0.txt", "aclImdb/train/labeledBow.feat", "aclImdb/README",
        "train/pos/12.txt", "train/pos/a_1.txt", "train/pos/1_11.txt", "train/pos/1_0.txt",
        "train/pos/1_8.txt.bak", "pos/1_8.txt", "dev/pos/1_8.txt", "train/pos/_8.txt"}) {
    INFO(bad);
    CHECK_FALSE(parse_review_path(bad, rp));
  }
}

TEST_CASE("imdb: text cleaning replaces br tags and invalid UTF-8") {
  std::string out;
  CHECK(clean_review("a<br />b<br /><br />c", out) == 0);
  CHECK(out == "a b  c");
  CHECK(clean_review("<br>kept<br/>", out) == 0);  // only the form IMDb uses is a tag
  CHECK(out == "<br>kept<br/>");
  CHECK(clean_review("bad \xC3( byte \xFF<br />end", out) == 2);
  CHECK(out == "bad \xEF\xBF\xBD( byte \xEF\xBF\xBD end");  // U+FFFD is EF BF BD
}

TEST_CASE("imdb: empty and invalid UTF-8 reviews are kept and counted") {
  TempDir tmp;
  auto files = made_up_reviews();
  files.push_back({"train/pos/20_8.txt", ""});
  files.push_back({"test/neg/9_2.txt", "caf\xE9 (latin-1) and a cut emoji \xF0\x9F\x98"});
  write_imdb_tarball(tmp / "a.tar.gz", files);
  Imdb d = read_imdb(tmp / "a.tar.gz");
  CHECK(d.train.size() == 7);
  CHECK(d.stats.empty == 1);
  CHECK(d.stats.invalid_utf8 == 1);
  CHECK(d.stats.replaced_chars == 2);  // \xE9 then "\xF0\x9F\x98" (one maximal subpart)
  CHECK(d.train.back().text.empty());  // 20_8 is the last pos review
  CHECK(d.test[2].text == "caf\xEF\xBF\xBD (latin-1) and a cut emoji \xEF\xBF\xBD");
}

TEST_CASE("imdb: a 1 MB review is read whole") {
  TempDir tmp;
  auto files = made_up_reviews();
  std::string big;
  while (big.size() < (1 << 20)) big += "very long review<br />";
  files.push_back({"train/neg/99_1.txt", big});
  write_imdb_folder(tmp.path, files);
  Imdb d = read_imdb(tmp.path);
  const Review& r = d.train[3];  // neg ids 0, 5, 7, 99
  CHECK(r.id == 99);
  CHECK(r.text.size() == big.size() / 22 * 17);  // each 22-byte "…<br />" became 17 bytes
}

TEST_CASE("imdb: missing inputs name the path") {
  TempDir tmp;
  CHECK(error_message([&] { read_imdb(tmp / "nope"); }) ==
        cat("[imdb] expected an aclImdb folder or aclImdb_v1.tar.gz at ", (tmp / "nope").string(),
            ", got nothing there (run `mase-data fetch imdb` or pass --data-dir)"));
  fs::create_directories(tmp / "empty");
  CHECK_THROWS_AS(read_imdb(tmp / "empty"), IoError);
  // A layout without any test reviews is not IMDb.
  write_imdb_folder(tmp / "half", {{"train/pos/0_9.txt", "x"}, {"test/pos/readme.md", "x"}});
  CHECK(error_message([&] { read_imdb(tmp / "half"); }).find("expected reviews under") !=
        std::string::npos);
}

TEST_CASE("imdb: truncated or non-gzip archives are clear errors") {
  TempDir tmp;
  // Enough text that the gzip stream spans several blocks, so a cut lands mid-review.
  auto files = made_up_reviews();
  for (int i = 0; i < 200; ++i) {
    std::string text;
    for (int k = 0; k < 200; ++k) text += cat("review ", i, " word ", (k * 7919 + i) % 1000, " ");
    files.push_back({cat("train/pos/", 100 + i, "_8.txt"), text});
  }
  write_imdb_tarball(tmp / "full.tar.gz", files);
  std::string bytes = read_bytes(tmp / "full.tar.gz");
  REQUIRE(bytes.size() > 10000);
  write_bytes(tmp / "cut.tar.gz", bytes.substr(0, bytes.size() / 2));
  std::string msg = error_message([&] { read_imdb(tmp / "cut.tar.gz"); });
  CHECK(msg.find("[imdb] cannot read " + (tmp / "cut.tar.gz").string()) == 0);
  CHECK(msg.find("truncated") != std::string::npos);
  CHECK_THROWS_AS(read_imdb(tmp / "cut.tar.gz"), IoError);

  write_bytes(tmp / "text.tar.gz", "this is not an archive at all\n");
  CHECK(error_message([&] { read_imdb(tmp / "text.tar.gz"); }).find("[imdb] cannot open") == 0);
  write_bytes(tmp / "zero.tar.gz", "");
  CHECK_THROWS_AS(read_imdb(tmp / "zero.tar.gz"), IoError);
}

TEST_CASE("imdb: duplicate ids and oversized files are refused") {
  TempDir tmp;
  auto files = made_up_reviews();
  files.push_back({"train/pos/3_9.txt", "same id as 3_10"});
  write_imdb_folder(tmp / "dup", files);
  CHECK(error_message([&] { read_imdb(tmp / "dup"); }).find("got train/pos/3_*.txt twice") !=
        std::string::npos);

  write_imdb_folder(tmp / "big", made_up_reviews());
  fs::path huge = tmp / "big/aclImdb/test/pos/9_9.txt";
  write_bytes(huge, "");
  fs::resize_file(huge, kMaxReviewBytes + 1);  // sparse: costs no disk
  CHECK(error_message([&] { read_imdb(tmp / "big"); }).find("not the IMDb dataset?") !=
        std::string::npos);
}
