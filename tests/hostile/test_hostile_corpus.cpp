// tests/hostile/test_hostile_corpus.cpp — the fuzzers' seed corpus kept as a test: every file
// of fuzz/corpus/<target>/ goes through its entry point (fuzz/targets.h) and must give the
// error listed for it in fuzz/corpus/expected.tsv ("accepted" = no error), on one line, clipped
// (no value dumped whole) — and no signal or other exception type. A file added to the corpus
// without a line in expected.tsv fails the test.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fuzz/targets.h"
#include "helpers.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCorpus = fs::path(MASE_FIXTURES_DIR) / ".." / ".." / "fuzz" / "corpus";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("hostile corpus: every file gives its expected one-line error") {
  std::map<std::string, std::string> expected;  // "target/file" -> part of the message
  std::ifstream tsv(kCorpus / "expected.tsv");
  REQUIRE(tsv.good());
  for (std::string line; std::getline(tsv, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    expected[line.substr(0, tab)] = line.substr(tab + 1);
  }
  std::set<std::string> seen;
  for (const auto& [target, fn] : mase::fuzz::targets()) {
    REQUIRE(fs::is_directory(kCorpus / target));
    for (const auto& e : fs::directory_iterator(kCorpus / target)) {
      const std::string key = target + "/" + e.path().filename().string();
      seen.insert(key);
      INFO(key);
      REQUIRE(expected.count(key) == 1);
      std::string msg;
      try {
        msg = mase::fuzz::run(target, read_all(e.path()));
      } catch (const std::exception& x) {
        FAIL("not a mase::Error: " << x.what());
      }
      INFO("message: " << msg);
      if (expected[key] == "accepted") {
        CHECK(msg.empty());
      } else {
        CHECK(msg.find(expected[key]) != std::string::npos);
        CHECK(msg.find('\n') == std::string::npos);
        CHECK(msg.size() < 1000);
      }
    }
  }
  for (const auto& [key, part] : expected) {
    INFO(key);
    CHECK(seen.count(key) == 1);  // a stale line for a file that is gone
  }
}
