// tests/main.cpp — doctest's main, shared by every test executable. Token caches that a test
// writes by default (data/fetch.h: $MASE_CACHE_DIR, else ~/.cache/mase) go to a folder of this
// process, removed at exit, so tests neither touch the user's cache nor race each other.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path cache;
  if (!std::getenv("MASE_CACHE_DIR")) {
    cache = fs::temp_directory_path() / ("mase-test-cache-" + std::to_string(::getpid()));
    ::setenv("MASE_CACHE_DIR", cache.c_str(), 1);
  }
  const int status = doctest::Context(argc, argv).run();
  std::error_code ec;
  if (!cache.empty()) fs::remove_all(cache, ec);
  return status;
}
