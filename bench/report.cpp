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

}  // namespace

RatioReporter::RatioReporter(const std::string& format, bool color) {
  if (format == "console") {
    inner_ = std::make_unique<benchmark::ConsoleReporter>(
        color ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None);
  } else if (format == "json") {
    inner_ = std::make_unique<benchmark::JSONReporter>();
  } else {
    throw ConfigError(cat("[mase-bench] expected --benchmark_format console or json, got '",
                          format, "'"));
  }
}

void RatioReporter::sync_streams() {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

bool RatioReporter::ReportContext(const Context& context) {
  sync_streams();
  return inner_->ReportContext(context);
}

void RatioReporter::ReportRuns(const std::vector<Run>& runs) {
  sync_streams();
  std::vector<Run> out = runs;
  for (Run& run : out) {
    if (run.error_occurred) continue;
    // stddev and cv aggregates are spreads, not rates: no ratio for them
    const std::string& agg = run.aggregate_name;
    if (run.run_type == Run::RT_Aggregate && agg != "mean" && agg != "median") continue;
    const benchmark::Counter* rate = rate_of(run);
    if (!rate) continue;
    const std::string& name = run.run_name.function_name;
    rates_[name + "|" + agg] = rate->value;  // any run may be someone's baseline
    if (const Relation* rel = relation_of(name)) {
      auto base = rates_.find(rel->baseline + "|" + agg);
      if (base != rates_.end() && base->second > 0)
        run.counters[rel->counter] = benchmark::Counter(rate->value / base->second);
    }
  }
  inner_->ReportRuns(out);
}

void RatioReporter::Finalize() {
  sync_streams();
  inner_->Finalize();
}

}  // namespace mase::bench
