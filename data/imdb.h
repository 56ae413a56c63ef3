// data/imdb.h — the IMDb Large Movie Review Dataset, read the way it is distributed.
//
// The official layout is aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt: 12,500 reviews in
// each of the four folders, rating 1..4 for neg and 7..10 for pos. read_imdb takes either the
// extracted folder or the aclImdb_v1.tar.gz itself, which it streams with libarchive (nothing
// is unpacked to disk). Both give the same Imdb, in a canonical order (per split: neg then
// pos, each by id), so results never depend on the order of a directory listing or a tarball.
//
// Text cleaning, the only changes made to a review: "<br />" (the only tag in IMDb) becomes
// one space, and invalid UTF-8 becomes U+FFFD (counted in ReadStats). unsup/, *.feat, urls,
// README and anything else outside {train,test}/{pos,neg}/ are ignored. An empty review is
// kept (it tokenizes to [CLS] [SEP]) and counted.
//
// Read next: fetch.h (where the archive comes from), tokenizer.h (what is done with the text).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mase::data {

struct Review {
  std::string text;    // cleaned, valid UTF-8
  int32_t label = 0;   // 1 = pos, 0 = neg
  int32_t rating = 0;  // the star rating in the file name, 1..10
  int32_t id = 0;      // the number in the file name (unique per split and label)
};

struct ReadStats {
  int64_t reviews = 0;          // kept, both splits
  int64_t bytes = 0;            // raw bytes of the kept reviews
  int64_t empty = 0;            // reviews with no text at all
  int64_t invalid_utf8 = 0;     // reviews that had ill-formed UTF-8
  int64_t replaced_chars = 0;   // U+FFFD inserted for them, in total
  int64_t ignored_entries = 0;  // files skipped: unsup/, *.feat, README, urls_*.txt, ...
};

struct Imdb {
  std::vector<Review> train, test;
  ReadStats stats;
};

// Reviews over this size are refused (IoError): a review is a few KB, the longest in IMDb
// is 14 KB; a 16 MiB "review" means the input is not IMDb.
constexpr int64_t kMaxReviewBytes = 16 << 20;

// `path` is an aclImdb folder, a folder that contains aclImdb/, or a .tar.gz (any tar that
// libarchive reads). Throws IoError naming the path and what was wrong.
Imdb read_imdb(const std::filesystem::path& path);
Imdb read_imdb_folder(const std::filesystem::path& folder);
Imdb read_imdb_archive(const std::filesystem::path& archive);

// The cleaning applied to every review (see above). Returns the U+FFFD count.
int64_t clean_review(std::string_view raw, std::string& out);

// "…/train/pos/123_8.txt" -> split "train", label 1, id 123, rating 8. False for any other
// path (unsup/, *.feat, README, a malformed name).
struct ReviewPath {
  std::string split;
  int32_t label = 0, id = 0, rating = 0;
};
bool parse_review_path(std::string_view path, ReviewPath& out);

}  // namespace mase::data
