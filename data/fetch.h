// data/fetch.h — where `--data imdb` comes from: a local copy, or a download into the cache.
//
// The data folder is `--data-dir DIR` if given, else $MASE_DATA_DIR, else ~/.cache/mase.
// Inside it, IMDb is imdb/aclImdb/ (extracted) or imdb/aclImdb_v1.tar.gz (as downloaded,
// read without unpacking). If neither is there, resolve_imdb downloads the official archive
// with libcurl into imdb/aclImdb_v1.tar.gz — to a temporary name first, renamed only once
// complete and checked to be gzip, so an interrupted or failed download leaves nothing that
// a later run could mistake for data.
//
// Read next: imdb.h (reading what was found), dataset.h (the whole pipeline).
#pragma once
#include <filesystem>
#include <string>

namespace mase::data {

// Large Movie Review Dataset v1.0 (Maas et al., ACL 2011), 84 MB.
inline constexpr const char* kImdbUrl =
    "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz";

// The data folder: `flag` if not empty, else $MASE_DATA_DIR, else $HOME/.cache/mase.
std::filesystem::path data_dir(const std::string& flag = "");

// Where tokenizer models and token caches go (never the data folder, which may be a shared
// course copy): `flag` if not empty, else $MASE_CACHE_DIR, else $HOME/.cache/mase.
std::filesystem::path default_cache_dir(const std::string& flag = "");

// DIR/imdb/aclImdb/ if it is a folder, else DIR/imdb/aclImdb_v1.tar.gz if it is a file,
// else an empty path.
std::filesystem::path find_imdb(const std::filesystem::path& dir);

struct FetchOptions {
  std::string url = kImdbUrl;  // tests use file:// URLs; a mirror works too
  bool progress = true;        // progress bar on stderr (only when stderr is a terminal)
};

// find_imdb(dir), or download the archive there and return its path. When the download
// fails the IoError (one line) says where it looked, that the download failed and why, and
// how to place the file by hand.
std::filesystem::path resolve_imdb(const std::filesystem::path& dir, const FetchOptions& opt = {});

// Downloads `url` to `dest` through a temporary file in dest's folder, renamed to `dest` when
// complete. `expect_gzip` rejects a body that is not gzip (an HTML error page, say).
// Throws IoError with libcurl's reason; no partial file is left behind.
void download(const std::string& url, const std::filesystem::path& dest, bool progress,
              bool expect_gzip = false);

}  // namespace mase::data
