// tests/data/data_helpers.h — made-up IMDb fixtures for the data tests: a temp folder in the
// official layout, a tarball of it built with libarchive, and where the real data lives.
#pragma once
#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"
#include "models/temp_dir.h"

namespace mase::test {

namespace fs = std::filesystem;

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// (path under aclImdb/, raw bytes) of a small made-up dataset in the official layout,
// with the distractors the reader must skip (unsup/, .feat, urls, README, imdb.vocab).
inline std::vector<std::pair<std::string, std::string>> made_up_reviews() {
  return {
      {"train/pos/0_9.txt", "A wonderful film.<br /><br />Loved it!"},
      {"train/pos/12_7.txt", "Great acting, great story."},
      {"train/pos/3_10.txt", "Best movie of the year."},
      {"train/neg/0_2.txt", "Terrible plot.<br />Boring."},
      {"train/neg/7_1.txt", "Awful. Just awful."},
      {"train/neg/5_4.txt", "Not good, not bad, mostly bad."},
      {"test/pos/1_8.txt", "Loved the music."},
      {"test/pos/0_10.txt", "A masterpiece!"},
      {"test/neg/2_3.txt", "Meh."},
      {"test/neg/4_1.txt", "The worst film I have seen."},
      // distractors
      {"train/unsup/0_0.txt", "unlabelled review"},
      {"train/labeledBow.feat", "0 0:1 1:2"},
      {"train/urls_pos.txt", "http://www.imdb.com/title/tt0453418/usercomments"},
      {"test/urls_neg.txt", "http://www.imdb.com/title/tt0064354/usercomments"},
      {"README", "Large Movie Review Dataset v1.0"},
      {"imdb.vocab", "the\nand\n"},
  };
}

// Writes `files` under root/aclImdb/ and returns root/aclImdb.
inline fs::path write_imdb_folder(const fs::path& root,
                                  const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [rel, bytes] : files) write_bytes(root / "aclImdb" / rel, bytes);
  return root / "aclImdb";
}

// A .tar.gz of `files` under aclImdb/, as the official archive (libarchive, pax + gzip).
inline void write_imdb_tarball(const fs::path& out,
                               const std::vector<std::pair<std::string, std::string>>& files) {
  fs::create_directories(out.parent_path());
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  REQUIRE(archive_write_open_filename(a, out.c_str()) == ARCHIVE_OK);
  for (const auto& [rel, bytes] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, ("aclImdb/" + rel).c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    if (!bytes.empty())
      REQUIRE(archive_write_data(a, bytes.data(), bytes.size()) == la_ssize_t(bytes.size()));
    archive_entry_free(e);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

// The shared development data (../shared/data), or an empty path after test::skip() (the case
// must return: ctest reports it skipped).
inline fs::path shared_file(const std::string& rel) {
  fs::path p = fs::path(MASE_SHARED_DIR) / "data" / rel;
  if (fs::exists(p)) return p;
  test::skip(p.string() + " is not present (see ../shared/data/README.md)");
  return {};
}

// The files of `dir` (recursively), as paths relative to it: to check nothing was left behind.
inline std::vector<std::string> list_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mase::test
