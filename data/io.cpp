// data/io.cpp — read_file and write_atomic (see io.h).
#include "data/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "runtime/error.h"

namespace mase::data {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path, std::string_view op) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  MASE_CHECK(in, IoError, "[", op, "] cannot read ", path.string(), ": ", std::strerror(errno));
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  MASE_CHECK(in.gcount() == static_cast<std::streamsize>(bytes.size()), IoError, "[", op,
             "] cannot read ", path.string(), ": short read");
  return bytes;
}

void write_atomic(const fs::path& path, std::string_view bytes, std::string_view op) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  MASE_CHECK(fd >= 0, IoError, "[", op, "] cannot write ", tmp.string(), ": ",
             std::strerror(errno));
  const char* p = bytes.data();
  size_t left = bytes.size();
  int err = 0;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = errno ? errno : EIO;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0) {
    fs::rename(tmp, path, ec);
    if (ec) err = ec.value();
  }
  if (err != 0) {
    fs::remove(tmp, ec);
    throw IoError(cat("[", op, "] cannot write ", path.string(), ": ", std::strerror(err)));
  }
}

}  // namespace mase::data
