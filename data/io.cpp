// data/io.cpp — read_file (see io.h).
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
  // a folder opens, and its tellg() at the end is 2^63 - 1: a std::bad_alloc, not an IoError
  std::error_code ec;
  MASE_CHECK(!fs::is_directory(path, ec), IoError, "[", op, "] cannot read ", path.string(),
             ": expected a file, got a folder");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  MASE_CHECK(in, IoError, "[", op, "] cannot read ", path.string(), ": ", std::strerror(errno));
  const std::streamoff size = in.tellg();
  MASE_CHECK(size >= 0, IoError, "[", op, "] cannot read ", path.string(), ": cannot tell its size");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  MASE_CHECK(in.gcount() == static_cast<std::streamsize>(bytes.size()), IoError, "[", op,
             "] cannot read ", path.string(), ": short read");
  return bytes;
}


}  // namespace mase::data
