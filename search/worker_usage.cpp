// search/worker_usage.cpp — see worker_usage.h.
#include "search/worker_usage.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>

#include "runtime/error.h"
#include "search/study_store.h"
#include "search/workers.h"

namespace mase::search {

WorkerUsage worker_usage(std::span<const TrialRecord> trials, const std::string& host,
                         std::span<const int64_t> pids, double since, double until) {
  MASE_CHECK(!pids.empty(), ConfigError, "[worker_usage] expected the run's processes, got none");
  WorkerUsage u;
  const int workers = static_cast<int>(pids.size());
  u.workers = workers;
  u.wall_s = std::max(0.0, until - since);
  std::map<int64_t, std::pair<double, double>> span;  // pid -> first start, last end
  for (const TrialRecord& r : trials) {
    if (!(r.start_s >= since && r.end_s <= until && r.end_s >= r.start_s)) continue;  // NaN out
    if (r.host != host || std::find(pids.begin(), pids.end(), r.pid) == pids.end()) continue;
    ++u.trials;
    u.busy_s += r.end_s - r.start_s;
    auto [it, fresh] = span.try_emplace(r.pid, r.start_s, r.end_s);
    if (!fresh) {
      it->second.first = std::min(it->second.first, r.start_s);
      it->second.second = std::max(it->second.second, r.end_s);
    }
  }
  u.processes = static_cast<int>(span.size());
  for (const auto& [who, first_last] : span) {
    u.idle_start_s += first_last.first - since;
    u.idle_end_s += until - first_last.second;
  }
  u.idle_start_s += std::max(0, workers - u.processes) * u.wall_s;
  u.idle_between_s =
      std::max(0.0, workers * u.wall_s - u.busy_s - u.idle_start_s - u.idle_end_s);
  return u;
}

std::string describe(const WorkerUsage& u) {
  char line[320];
  std::snprintf(line, sizeof line,
                "%d processes ran %d trials in %.1f s: busy %.0f%% of %d × %.1f s (%.1f s of "
                "trials); idle %.1f s: %.1f starting, %.1f at the end, %.1f between trials",
                u.workers, u.trials, u.wall_s, 100 * u.busy_fraction(), u.workers, u.wall_s,
                u.busy_s, u.idle_start_s + u.idle_end_s + u.idle_between_s, u.idle_start_s,
                u.idle_end_s, u.idle_between_s);
  return line;
}

double wall_clock_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string describe_run(std::span<const Study> studies, const Workers& workers) {
  const double until = wall_clock_s();
  std::vector<TrialRecord> all;
  for (const Study& s : studies) {
    std::vector<TrialRecord> trials = s.trials();
    all.insert(all.end(), std::make_move_iterator(trials.begin()),
               std::make_move_iterator(trials.end()));
  }
  return describe(
      worker_usage(all, store::host_name(), workers.pids(), workers.started_s(), until));
}

}  // namespace mase::search
