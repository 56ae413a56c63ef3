// runtime/atomic_file.cpp — see atomic_file.h.
#include "runtime/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstring>

#include "runtime/error.h"

namespace mase {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp-" + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "wb");
  MASE_CHECK(f_ != nullptr, IoError, "[write] cannot create ", tmp_, ": ", std::strerror(errno),
             " (does the directory exist and is it writable?)");
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (f_) std::fclose(f_);
  std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t nbytes) {
  MASE_CHECK(f_ && !committed_, IoError, "[write] ", path_, " is already committed");
  if (nbytes == 0) return;
  size_t n = std::fwrite(data, 1, nbytes, f_);
  MASE_CHECK(n == nbytes, IoError, "[write] ", tmp_, ": wrote ", n, " of ", nbytes, " bytes: ",
             std::strerror(errno), " (disk full?)");
}

void AtomicFile::commit() {
  MASE_CHECK(f_ && !committed_, IoError, "[write] ", path_, " is already committed");
  bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
  int err = errno;
  ok = (std::fclose(f_) == 0) && ok;
  f_ = nullptr;
  MASE_CHECK(ok, IoError, "[write] cannot flush ", tmp_, ": ", std::strerror(err), " (disk full?)");
  MASE_CHECK(std::rename(tmp_.c_str(), path_.c_str()) == 0, IoError, "[write] cannot rename ", tmp_,
             " to ", path_, ": ", std::strerror(errno));
  committed_ = true;
}

void write_text_atomic(const std::string& path, std::string_view text) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // else: fails below
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace mase
