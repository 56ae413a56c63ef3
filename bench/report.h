// bench/report.h — the reporter that turns figures into ratios to their baseline.
//
// Google Benchmark prints one line (or JSON object) per run. RatioReporter wraps the usual
// console or JSON reporter and, before passing each run on, adds the ratio counters that
// bench/common.h's relative_to asked for, e.g. vs_4096 = flops(a BERT GEMM) / flops(sgemm
// 4096³). It remembers the last rate of every baseline, per aggregate ("" for a single run,
// "mean", "median"), so a median is divided by a median. Nothing else in the output changes.
// With --benchmark_enable_random_interleaving=true (repetitions of all benchmarks shuffled,
// so that a machine whose load drifts slows every benchmark alike) a benchmark may finish
// before its baseline; its lines are then held back until the baseline's are in.
//
// Read next: bench/main.cpp (which installs it).
#pragma once
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mase::bench {

class RatioReporter : public benchmark::BenchmarkReporter {
 public:
  // `format` is console or json (--benchmark_format; Google Benchmark deprecates csv);
  // `interleaved`: runs may arrive before their baseline's (random interleaving).
  RatioReporter(const std::string& format, bool color, bool interleaved);

  // Every ratio counter (vs_*) of every run reported so far, for mase-bench --plot:
  // the benchmark's name, its aggregate ("" for a single run, "median", …) and the ratios.
  struct Ratios {
    std::string name, aggregate;
    std::map<std::string, double> values;
  };
  const std::vector<Ratios>& ratios() const { return ratios_; }

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  void sync_streams();  // the library sets our streams; the wrapped reporter writes to them
  bool ready(const std::vector<Run>& runs) const;  // every baseline it needs has been seen
  void report(std::vector<Run> runs);              // add the ratios, pass on to inner_
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  bool interleaved_ = false;
  bool csv_ = false;  // a CSV file holds the table only (the machine context goes to the console)
  std::map<std::string, double> rates_;  // "benchmark name|aggregate" -> bytes/s or FLOP/s
  std::vector<std::vector<Run>> held_;   // waiting for their baseline (interleaved only)
  std::vector<Ratios> ratios_;
};

}  // namespace mase::bench
