// bench/report.cpp — RatioReporter (see report.h).
#include "bench/report.h"

#include "bench/common.h"
#include "runtime/error.h"

namespace mase::bench {
namespace {

// The rate a run is compared by: bandwidth for memory-bound kernels, else FLOP/s.
const benchmark::Counter* rate_of(const benchmark::BenchmarkReporter::Run& run) {
  for (const char* key : {"bw", "flops"}) {
    auto it = run.counters.find(key);
    if (it != run.counters.end()) return &it->second;
  }
  return nullptr;
}

// The aggregate a run is compared within: "" for a single run, "mean" or "median"; false for
// stddev and cv aggregates, which are spreads, not rates, and get no ratio.
bool comparable(const benchmark::BenchmarkReporter::Run& run, std::string* agg) {
  *agg = run.aggregate_name;
  if (run.error_occurred || !rate_of(run)) return false;
  return run.run_type != benchmark::BenchmarkReporter::Run::RT_Aggregate || *agg == "mean" ||
         *agg == "median";
}

}  // namespace

RatioReporter::RatioReporter(const std::string& format, bool color, bool interleaved)
    : interleaved_(interleaved), csv_(format == "csv") {
  if (format == "console") {
    inner_ = std::make_unique<benchmark::ConsoleReporter>(
        color ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None);
  } else if (format == "json") {
    inner_ = std::make_unique<benchmark::JSONReporter>();
  } else if (format == "csv") {  // a table for a spreadsheet or a plot (counters as columns)
#pragma GCC diagnostic push  // Google Benchmark marks its CSV reporter deprecated, not removed
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    inner_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  } else {
    throw ConfigError(cat("[mase-bench] expected --benchmark_format console, json or csv, got '",
                          format, "'"));
  }
}

void RatioReporter::sync_streams() {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

bool RatioReporter::ReportContext(const Context& context) {
  sync_streams();
  return csv_ || inner_->ReportContext(context);
}

void RatioReporter::ReportRuns(const std::vector<Run>& runs) {
  sync_streams();
  std::string agg;
  for (const Run& run : runs)  // any run may be someone's baseline
    if (comparable(run, &agg)) rates_[run.run_name.function_name + "|" + agg] = rate_of(run)->value;
  if (!interleaved_) {
    report(runs);
    return;
  }
  held_.push_back(runs);
  std::vector<std::vector<Run>> waiting;
  for (auto& group : held_) {
    if (ready(group)) report(std::move(group));
    else waiting.push_back(std::move(group));
  }
  held_ = std::move(waiting);
}

bool RatioReporter::ready(const std::vector<Run>& runs) const {
  std::string agg;
  for (const Run& run : runs) {
    const Relation* rel = relation_of(run.run_name.function_name);
    if (rel && comparable(run, &agg) && !rates_.count(rel->baseline + "|" + agg)) return false;
  }
  return true;
}

void RatioReporter::report(std::vector<Run> runs) {
  std::string agg;
  for (Run& run : runs) {
    const Relation* rel = relation_of(run.run_name.function_name);
    if (!rel || !comparable(run, &agg)) continue;
    auto base = rates_.find(rel->baseline + "|" + agg);
    if (base != rates_.end() && base->second > 0)
      run.counters[rel->counter] = benchmark::Counter(rate_of(run)->value / base->second);
  }
  for (const Run& run : runs) {
    if (run.error_occurred) continue;
    Ratios r{run.run_name.str(), run.aggregate_name, {}};  // (benchmark_name() has "_median")
    for (const auto& [key, counter] : run.counters)
      if (key.starts_with("vs_")) r.values[key] = counter.value;
    if (!r.values.empty()) ratios_.push_back(std::move(r));
  }
  inner_->ReportRuns(runs);
}

void RatioReporter::Finalize() {
  sync_streams();
  for (auto& group : held_) report(std::move(group));  // baselines that never ran: no ratio
  held_.clear();
  inner_->Finalize();
}

}  // namespace mase::bench
