// data/fetch.cpp — data folder resolution and the libcurl download (see fetch.h).
#include "data/fetch.h"

#include <curl/curl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/error.h"

namespace mase::data {
namespace fs = std::filesystem;

namespace {
// `flag` if not empty, else $<env>, else $HOME/.cache/mase.
fs::path flag_env_or_home(const std::string& flag, const char* flag_name, const char* env_name,
                          const char* what) {
  if (!flag.empty()) return fs::path(flag);
  if (const char* env = std::getenv(env_name); env && *env) return fs::path(env);
  const char* home = std::getenv("HOME");
  MASE_CHECK(home && *home, ConfigError, "[data] expected ", flag_name, ", $", env_name,
             " or $HOME ", what, ", got none");
  return fs::path(home) / ".cache" / "mase";
}
}  // namespace

fs::path data_dir(const std::string& flag) {
  return flag_env_or_home(flag, "--data-dir", "MASE_DATA_DIR", "to locate the data");
}

fs::path default_cache_dir(const std::string& flag) {
  return flag_env_or_home(flag, "--cache-dir", "MASE_CACHE_DIR", "for the token cache");
}

fs::path find_imdb(const fs::path& dir) {
  if (fs::is_directory(dir / "imdb" / "aclImdb")) return dir / "imdb" / "aclImdb";
  if (fs::is_regular_file(dir / "imdb" / "aclImdb_v1.tar.gz"))
    return dir / "imdb" / "aclImdb_v1.tar.gz";
  return {};
}

namespace {

struct Transfer {
  FILE* file = nullptr;
  bool progress = false;
  std::chrono::steady_clock::time_point start, last;
};

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  return std::fwrite(data, size, n, t->file) * size;  // short count -> CURLE_WRITE_ERROR
}

// "[fetch] [##########----------]  41%  34.2 / 84.1 MB  5.1 MB/s", redrawn in place.
int progress_cb(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  auto tick = std::chrono::steady_clock::now();
  bool done = total > 0 && now == total;
  if (!t->progress || (tick - t->last < std::chrono::milliseconds(100) && !done)) return 0;
  t->last = tick;
  double secs = std::chrono::duration<double>(tick - t->start).count();
  double mb = now / 1e6, rate = secs > 0 ? mb / secs : 0;
  if (total > 0) {
    int filled = static_cast<int>(20 * now / total);
    std::fprintf(stderr, "\r[fetch] [%s%s] %3d%%  %.1f / %.1f MB  %.1f MB/s ",
                 std::string(filled, '#').c_str(), std::string(20 - filled, '-').c_str(),
                 static_cast<int>(100 * now / total), mb, total / 1e6, rate);
  } else {
    std::fprintf(stderr, "\r[fetch] %.1f MB  %.1f MB/s ", mb, rate);
  }
  std::fflush(stderr);
  return 0;
}

}  // namespace

void download(const std::string& url, const fs::path& dest, bool progress, bool expect_gzip) {
  static std::once_flag once;  // curl_global_init is not thread-safe: once per process
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

  std::error_code ec;
  std::vector<fs::path> made;  // the folders this call creates, innermost first: removed on failure
  for (fs::path p = dest.parent_path(); !p.empty() && !fs::exists(p, ec); p = p.parent_path())
    made.push_back(p);
  fs::create_directories(dest.parent_path(), ec);
  MASE_CHECK(!ec, IoError, "[fetch] cannot create ", dest.parent_path().string(), ": ",
             ec.message());
  // The temporary name is unique per process, so two runs never write the same file.
  fs::path tmp = dest;
  tmp += ".part." + std::to_string(::getpid());
  Transfer t;
  t.file = std::fopen(tmp.c_str(), "wb");
  MASE_CHECK(t.file, IoError, "[fetch] cannot write ", tmp.string(), " (is the folder writable?)");
  t.progress = progress && ::isatty(::fileno(stderr));
  t.start = t.last = std::chrono::steady_clock::now();

  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  char err[CURL_ERROR_SIZE] = {0};
  CURLcode rc = CURLE_FAILED_INIT;
  if (curl) {
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // HTTP 404 is an error, not a body to save
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // give up below 1 KB/s for 60 s
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mase-cpp");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    rc = curl_easy_perform(c);
  }
  if (t.progress) std::fprintf(stderr, "\n");
  bool flushed = std::fflush(t.file) == 0 && ::fsync(::fileno(t.file)) == 0;
  flushed = (std::fclose(t.file) == 0) && flushed;

  std::string why;
  if (rc != CURLE_OK) {
    why = err[0] ? err : curl_easy_strerror(rc);
  } else if (!flushed) {
    why = "could not write " + tmp.string() + " (disk full?)";
  } else if (expect_gzip) {
    unsigned char magic[2] = {0, 0};
    FILE* f = std::fopen(tmp.c_str(), "rb");
    size_t got = f ? std::fread(magic, 1, 2, f) : 0;
    if (f) std::fclose(f);
    if (got != 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
      why = "the server sent something that is not a gzip archive (an error page?)";
    }
  }
  if (why.empty()) {
    fs::rename(tmp, dest, ec);  // atomic within one filesystem
    if (ec) why = "cannot rename " + tmp.string() + " to " + dest.string() + ": " + ec.message();
  }
  if (!why.empty()) {
    fs::remove(tmp, ec);
    for (const fs::path& p : made) fs::remove(p, ec);  // only empty ones: nothing left behind
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw IoError(cat("[fetch] downloading ", url, " failed: ", why));
  }
}

fs::path resolve_imdb(const fs::path& dir, const FetchOptions& opt) {
  if (fs::path found = find_imdb(dir); !found.empty()) return found;
  fs::path dest = dir / "imdb" / "aclImdb_v1.tar.gz";
  try {
    if (opt.progress)
      std::fprintf(stderr, "[fetch] downloading %s to %s\n", opt.url.c_str(), dest.c_str());
    download(opt.url, dest, opt.progress, /*expect_gzip=*/true);
  } catch (const IoError& e) {
    std::string why = e.what();
    if (why.rfind("[fetch] ", 0) == 0) why.erase(0, 8);
    throw IoError(cat("[fetch] expected IMDb in ", (dir / "imdb/aclImdb").string(), "/ or ",
                      dest.string(), ", got neither; ", why,
                      " (download aclImdb_v1.tar.gz by hand ", "and place it at ", dest.string(),
                      ", or pass --data-dir / set MASE_DATA_DIR ",
                      "to a folder with imdb/ in it)"));
  }
  return dest;
}

}  // namespace mase::data
