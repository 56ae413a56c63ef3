// tests/models/temp_dir.h — a fresh directory under the system temp dir, removed on scope exit.
// The one TempDir of the test suite (data_helpers.h uses it too): two classes of one name in one
// test binary would be an ODR violation, and a unity build would not compile.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace mase::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    // mkdtemp picks a name no other process holds (a pid and a counter can be reused)
    std::string tmpl = (std::filesystem::temp_directory_path() / "mase-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("TempDir: mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path operator/(const std::string& name) const { return path / name; }
};

}  // namespace mase::test
