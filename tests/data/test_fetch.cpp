// tests/data/test_fetch.cpp — where `--data imdb` resolves to, and downloads with libcurl on
// file:// URLs (nothing here can reach the internet): atomic success, one-line errors, no
// partial file left behind, and resolve_imdb's message when the download fails.
#include <cstdlib>
#include <optional>

#include "data/fetch.h"
#include "data/imdb.h"
#include "data_helpers.h"

using namespace mase;
using namespace mase::data;
using namespace mase::test;

namespace {
// Sets an environment variable for the scope, restoring the old value after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

std::string file_url(const fs::path& p) { return "file://" + fs::absolute(p).string(); }
}  // namespace

TEST_CASE("fetch: the data folder is the flag then MASE_DATA_DIR then HOME cache") {
  ScopedEnv home("HOME", "/home/student");
  {
    ScopedEnv env("MASE_DATA_DIR", "/data/env");
    CHECK(data_dir("/data/flag") == fs::path("/data/flag"));
    CHECK(data_dir("") == fs::path("/data/env"));
  }
  ScopedEnv env("MASE_DATA_DIR", nullptr);
  CHECK(data_dir("") == fs::path("/home/student/.cache/mase"));
  ScopedEnv no_home("HOME", nullptr);
  CHECK_THROWS_AS(data_dir(""), ConfigError);
}

TEST_CASE("fetch: find_imdb prefers the extracted folder over the archive") {
  TempDir tmp;
  CHECK(find_imdb(tmp.path).empty());
  write_bytes(tmp / "imdb/aclImdb_v1.tar.gz", "x");
  CHECK(find_imdb(tmp.path) == tmp / "imdb/aclImdb_v1.tar.gz");
  fs::create_directories(tmp / "imdb/aclImdb");
  CHECK(find_imdb(tmp.path) == tmp / "imdb/aclImdb");
}

TEST_CASE("fetch: a download lands complete under its final name") {
  TempDir tmp;
  std::string payload;
  for (int i = 0; i < 100000; ++i) payload += static_cast<char>((i * 31) & 0xFF);  // binary
  write_bytes(tmp / "src/file.bin", payload);
  download(file_url(tmp / "src/file.bin"), tmp / "cache/sub/file.bin", /*progress=*/false);
  CHECK(read_bytes(tmp / "cache/sub/file.bin") == payload);
  CHECK(list_files(tmp / "cache") == std::vector<std::string>{"sub/file.bin"});  // no .part file
}

TEST_CASE("fetch: a failed download is one line and leaves nothing") {
  TempDir tmp;
  const std::string url = file_url(tmp / "missing.tar.gz");
  std::string msg = error_message([&] { download(url, tmp / "cache/out.tar.gz", false); });
  CHECK(msg.find("[fetch] downloading " + url + " failed: ") == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(list_files(tmp.path).empty());
  CHECK_THROWS_AS(download(url, tmp / "cache/out.tar.gz", false), IoError);

  // Not gzip (an error page served with status 200, say): refused, nothing kept.
  write_bytes(tmp / "page.html", "<html>Service unavailable</html>");
  msg = error_message(
      [&] { download(file_url(tmp / "page.html"), tmp / "cache/x.tar.gz", false, true); });
  CHECK(msg.find("not a gzip archive") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp / "cache"));  // the folder it made is gone too
  // a folder that was there before stays (only what the failed call made is removed)
  std::filesystem::create_directories(tmp / "kept");
  CHECK_THROWS_AS(download(url, tmp / "kept/sub/out.tar.gz", false), IoError);
  CHECK(std::filesystem::is_directory(tmp / "kept"));
  CHECK_FALSE(std::filesystem::exists(tmp / "kept/sub"));
}

TEST_CASE("fetch: resolve_imdb downloads into the cache then finds it") {
  TempDir tmp;
  write_imdb_tarball(tmp / "mirror/aclImdb_v1.tar.gz", made_up_reviews());
  FetchOptions opt;
  opt.url = file_url(tmp / "mirror/aclImdb_v1.tar.gz");
  opt.progress = false;
  fs::path got = resolve_imdb(tmp / "cache", opt);
  CHECK(got == tmp / "cache/imdb/aclImdb_v1.tar.gz");
  CHECK(read_imdb(got).train.size() == 6);
  fs::remove(tmp / "mirror/aclImdb_v1.tar.gz");  // a second run does not download again
  CHECK(resolve_imdb(tmp / "cache", opt) == got);
}

TEST_CASE("fetch: offline the error says where it looked why it failed and what to do") {
  TempDir tmp;
  FetchOptions opt;
  opt.url = file_url(tmp / "nowhere/aclImdb_v1.tar.gz");
  opt.progress = false;
  std::string msg = error_message([&] { resolve_imdb(tmp / "cache", opt); });
  const std::string dest = (tmp / "cache/imdb/aclImdb_v1.tar.gz").string();
  CHECK(msg.find("[fetch] expected IMDb in " + (tmp / "cache/imdb/aclImdb").string() + "/ or " +
                 dest + ", got neither; downloading " + opt.url + " failed: ") == 0);
  CHECK(msg.find("place it at " + dest) != std::string::npos);
  CHECK(msg.find("--data-dir") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK_FALSE(fs::exists(dest));
  CHECK(list_files(tmp.path).empty());
}
