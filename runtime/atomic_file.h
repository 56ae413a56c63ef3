// runtime/atomic_file.h — write a file so that it is either complete or not there at all.
//
// Checkpoints must survive a crash, a full disk or Ctrl-C in the middle of a save without
// corrupting what was on disk: the bytes go to "<path>.tmp-<pid>", which is flushed, fsync'ed
// and then renamed over <path> (rename(2) is atomic within a file system). If anything fails,
// or the AtomicFile is destroyed before commit(), the temporary file is removed and <path>
// keeps its old content. The files the project writes whole go through here: checkpoints and
// safetensors (models/), tokenizers and the token cache (data/), a run's config, state and
// final report (train/), studies' CSVs and plots (search/). A run's logs are appended a line at
// a time (train/run_dir.cpp) and only rewritten through here when trimmed.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace mase {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // IoError if the temporary file cannot be created
  ~AtomicFile();                           // not committed: the temporary file is removed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);  // IoError on a short write (disk full, ...)
  void write(std::string_view s) { write(s.data(), s.size()); }
  void commit();  // flush, fsync, close, rename over the final path

  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  bool committed_ = false;
};

// The whole of `text` (any bytes) written to `path` atomically; creates the parent folder.
void write_text_atomic(const std::string& path, std::string_view text);

}  // namespace mase
