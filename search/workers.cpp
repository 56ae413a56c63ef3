// search/workers.cpp — fork N - 1 copies of this process onto one study, and wait for them.
// Read search/workers.h first (why this is safe with SQLite, and how the tool uses it).
#include "search/workers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/error.h"

namespace mase::search {

Workers::Workers(int n, Study& study) : Workers(n, std::span<Study>(&study, 1)) {}

Workers::Workers(int n, std::span<Study> studies) {
  MASE_CHECK(n >= 1, ConfigError, "[workers] expected --workers >= 1, got ", n);
  if (n == 1) return;
  std::vector<std::pair<std::string, std::string>> where;  // (storage, name) of each study
  for (Study& s : studies) {
    where.emplace_back(s.storage(), s.name());
    Study closing = std::move(s);  // no connection may cross the fork
  }
  std::fflush(nullptr);                  // or buffered output would be printed by every copy
  for (int i = 1; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {  // a copy: it has no copies of its own to wait for
      index_ = i;
      children_.clear();
      break;
    }
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      wait();
      throw IoError(cat("[workers] fork of worker ", i, " of ", n, ": ", why,
                        " (too many processes? try fewer --workers)"));
    }
    children_.push_back(pid);
  }
  try {
    for (size_t i = 0; i < studies.size(); ++i)  // every process its own connection, the stored
      studies[i] = Study::load(where[i].first, where[i].second);  // sampler and seed
  } catch (...) {  // the parent: its copies first, as the destructor (which will not run) would
    if (!children_.empty()) wait();
    throw;
  }
}

Workers::~Workers() {
  if (!children_.empty()) wait();
}

int Workers::wait() {
  int failed = 0;
  for (pid_t pid : children_) {
    int status = 0;
    while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
    }
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  children_.clear();
  return failed;
}

}  // namespace mase::search
