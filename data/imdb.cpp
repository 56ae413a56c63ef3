// data/imdb.cpp — read_imdb from a folder or straight from the tarball (libarchive).
//
// Both readers collect (ReviewPath, raw bytes) pairs and hand them to `Collector`, which
// cleans the text, counts, and at the end sorts into the canonical order and checks the
// result looks like IMDb (both splits present, no duplicate ids).
#include "data/imdb.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <memory>
#include <tuple>

#include "data/utf8.h"
#include "runtime/error.h"

namespace mase::data {
namespace fs = std::filesystem;

int64_t clean_review(std::string_view raw, std::string& out) {
  out.clear();
  int64_t replaced = sanitize_utf8(raw, out);
  // "<br />" -> " ", in place (the output is never longer than the input).
  constexpr std::string_view kBr = "<br />";
  size_t pos = out.find(kBr);
  if (pos == std::string::npos) return replaced;
  size_t w = pos;
  for (size_t r = pos; r < out.size();) {
    if (out.compare(r, kBr.size(), kBr) == 0) {
      out[w++] = ' ';
      r += kBr.size();
    } else {
      out[w++] = out[r++];
    }
  }
  out.resize(w);
  return replaced;
}

namespace {
bool parse_int(std::string_view s, int32_t& v) {
  if (s.empty() || s.size() > 9) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

bool parse_review_path(std::string_view path, ReviewPath& out) {
  // The last three components: <split>/<label>/<id>_<rating>.txt
  std::string_view parts[3];
  for (int k = 2; k >= 0; --k) {
    size_t slash = path.rfind('/');
    if (k > 0 && slash == std::string_view::npos) return false;
    parts[k] = slash == std::string_view::npos ? path : path.substr(slash + 1);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  }
  if (parts[0] != "train" && parts[0] != "test") return false;
  if (parts[1] != "pos" && parts[1] != "neg") return false;
  std::string_view name = parts[2];
  if (name.size() < 4 || name.substr(name.size() - 4) != ".txt") return false;
  name.remove_suffix(4);
  size_t us = name.find('_');
  if (us == std::string_view::npos) return false;
  if (!parse_int(name.substr(0, us), out.id) || !parse_int(name.substr(us + 1), out.rating)) {
    return false;
  }
  if (out.rating < 1 || out.rating > 10) return false;
  out.split = std::string(parts[0]);
  out.label = parts[1] == "pos" ? 1 : 0;
  return true;
}

namespace {

class Collector {
 public:
  explicit Collector(std::string source) : source_(std::move(source)) {}

  void add(const ReviewPath& rp, std::string_view raw) {
    Review r;
    int64_t replaced = clean_review(raw, r.text);
    r.label = rp.label;
    r.rating = rp.rating;
    r.id = rp.id;
    ReadStats& s = imdb_.stats;
    s.reviews += 1;
    s.bytes += static_cast<int64_t>(raw.size());
    s.empty += raw.empty() ? 1 : 0;
    s.invalid_utf8 += replaced > 0 ? 1 : 0;
    s.replaced_chars += replaced;
    (rp.split == "train" ? imdb_.train : imdb_.test).push_back(std::move(r));
  }
  void ignore() { imdb_.stats.ignored_entries += 1; }

  Imdb finish(std::string_view layout_root) {
    for (auto* split : {&imdb_.train, &imdb_.test}) {
      const char* name = split == &imdb_.train ? "train" : "test";
      MASE_CHECK(!split->empty(), IoError, "[imdb] expected reviews under ", layout_root, name,
                 "/{pos,neg}/<id>_<rating>.txt in ", source_,
                 ", got none (is this the official aclImdb layout?)");
      std::sort(split->begin(), split->end(), [](const Review& a, const Review& b) {
        return std::tie(a.label, a.id) < std::tie(b.label, b.id);
      });
      for (size_t i = 1; i < split->size(); ++i) {
        const Review &a = (*split)[i - 1], &b = (*split)[i];
        MASE_CHECK(a.label != b.label || a.id != b.id, IoError,
                   "[imdb] expected one file per id, got ", name, "/", b.label ? "pos" : "neg", "/",
                   b.id, "_*.txt twice in ", source_);
      }
    }
    return std::move(imdb_);
  }

 private:
  std::string source_;
  Imdb imdb_;
};

void check_size(int64_t size, std::string_view name, const fs::path& source) {
  MASE_CHECK(size <= kMaxReviewBytes, IoError, "[imdb] expected reviews of at most ",
             kMaxReviewBytes, " bytes, got ", size, " bytes in ", name, " of ", source.string(),
             " (not the IMDb dataset?)");
}

}  // namespace

Imdb read_imdb_folder(const fs::path& folder) {
  fs::path root = folder;
  if (!fs::is_directory(root / "train") && fs::is_directory(root / "aclImdb")) root /= "aclImdb";
  MASE_CHECK(fs::is_directory(root / "train") && fs::is_directory(root / "test"), IoError,
             "[imdb] expected train/ and test/ folders in ", root.string(),
             ", got none (pass the aclImdb folder or the folder that contains it)");
  Collector c(root.string());
  std::string raw;
  for (const char* split : {"train", "test"}) {
    // Only the label folders are opened: unsup/ (50,000 files) is never listed.
    for (const auto& entry : fs::directory_iterator(root / split)) {
      std::string leaf = entry.path().filename().string();
      if (leaf != "pos" && leaf != "neg") {
        c.ignore();
        continue;
      }
      for (const auto& file : fs::directory_iterator(entry.path())) {
        ReviewPath rp;
        std::string rel = std::string(split) + "/" + leaf + "/" + file.path().filename().string();
        if (!file.is_regular_file() || !parse_review_path(rel, rp)) {
          c.ignore();
          continue;
        }
        int64_t size = static_cast<int64_t>(file.file_size());
        check_size(size, rel, root);
        std::ifstream in(file.path(), std::ios::binary);
        raw.resize(static_cast<size_t>(size));
        in.read(raw.data(), size);
        MASE_CHECK(in.gcount() == size, IoError, "[imdb] expected ", size, " bytes in ",
                   file.path().string(), ", got ", in.gcount(), " (file changed while reading?)");
        c.add(rp, raw);
      }
    }
  }
  return c.finish(root.string() + "/");
}

Imdb read_imdb_archive(const fs::path& path) {
  MASE_CHECK(fs::is_regular_file(path), IoError, "[imdb] expected an archive at ", path.string(),
             ", got nothing there");
  // unique_ptr with archive_read_free closes the archive on every path, exceptions included.
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(a.get());  // gzip (and bz2/xz, harmless)
  archive_read_support_format_tar(a.get());  // tar only: a random file is "not an archive"
  auto fail = [&](const char* what) {
    throw IoError(
        cat("[imdb] cannot ", what, " ", path.string(), ": ",
            archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error",
            " (a truncated or corrupt download? delete it and run `mase-data fetch imdb`)"));
  };
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) fail("open");
  Collector c(path.string());
  std::string raw;
  archive_entry* entry = nullptr;
  while (true) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) fail("read");
    ReviewPath rp;
    const char* name = archive_entry_pathname(entry);
    if (archive_entry_filetype(entry) != AE_IFREG || name == nullptr ||
        !parse_review_path(name, rp)) {
      c.ignore();  // libarchive skips the entry's data on the next read_next_header
      continue;
    }
    int64_t size = archive_entry_size(entry);
    check_size(size, name, path);
    raw.resize(static_cast<size_t>(size));
    int64_t got = 0;  // archive_read_data may return less than asked: loop to the end
    while (got < size) {
      la_ssize_t n = archive_read_data(a.get(), raw.data() + got, raw.size() - got);
      if (n < 0) fail("read");
      if (n == 0) break;
      got += n;
    }
    MASE_CHECK(got == size, IoError, "[imdb] expected ", size, " bytes for ", name, " in ",
               path.string(), ", got ", got, " (a truncated download? delete it and refetch)");
    c.add(rp, raw);
  }
  return c.finish("aclImdb/");
}

Imdb read_imdb(const fs::path& path) {
  MASE_CHECK(fs::exists(path), IoError,
             "[imdb] expected an aclImdb folder or aclImdb_v1.tar.gz at ", path.string(),
             ", got nothing there (run `mase-data fetch imdb` or pass --data-dir)");
  return fs::is_directory(path) ? read_imdb_folder(path) : read_imdb_archive(path);
}

}  // namespace mase::data
