// bench/main.cpp — mase-bench: the microbenchmarks of mase-cpp, on Google Benchmark.
//
//   build/bin/mase-bench                               # every suite, all cores
//   build/bin/mase-bench --suite elementwise --threads 2 --benchmark_repetitions=5
//   build/bin/mase-bench --benchmark_format=json > run.json
//   build/bin/mase-bench --e2e                         # BERT training/eval steps only
//   build/bin/mase-bench --e2e --compile               # + each step through graph::compile
//
// Our own flags (--threads, --suite) are parsed here with CLI11; everything else is handed to
// benchmark::Initialize, so every --benchmark_* flag works as documented by Google Benchmark.
// Suites run in the order of kSuites: gemm first, and its first benchmark is sgemm 4096³,
// so the machine's limit is the first figure printed.
//
// Read next: bench/common.h (helpers every suite uses), docs/benchmarks.md (how to read it).
#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>
#include <regex.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common.h"
#include "bench/gpu_common.h"
#include "bench/report.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/sdpa_amx.h"
#include "runtime/cpu_features.h"
#include "runtime/gpu_math.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sgemm_packed.h"
#include "runtime/parallel.h"
#include "search/curve_plot.h"

namespace mase::bench {
void register_gemm();         // bench/bench_gemm.cpp
void register_elementwise();  // bench/bench_elementwise.cpp
void register_int8();         // bench/bench_int8.cpp
void register_gemm_ladder();  // bench/bench_gemm_ladder.cpp
void register_fused();        // bench/bench_fused.cpp
void register_quant();        // bench/bench_quant.cpp
void register_e2e();          // bench/bench_e2e.cpp
void set_e2e_compiled(bool on);  // bench/bench_e2e.cpp: --compile
void register_softmax();      // bench/bench_softmax.cpp
void register_sdpa();         // bench/bench_sdpa.cpp
void register_gpu_base();     // bench/bench_gpu_base.cpp
void register_gpu_softmax();  // bench/bench_gpu_softmax.cpp
void register_gpu_sdpa();     // bench/bench_gpu_sdpa.cpp
void register_gpu_quant();    // bench/bench_gpu_quant.cpp
void register_gpu_fused();    // bench/bench_gpu_fused.cpp
void register_gpu_step();     // bench/bench_gpu_step.cpp
}  // namespace mase::bench

namespace {

struct Suite {
  const char* name;
  const char* what;
  void (*register_all)();
};

// The order here is the order of the output. A new suite: one file, one line.
const Suite kSuites[] = {
    {"gemm", "OpenBLAS sgemm: 4096³ (the machine's limit), BERT Linear fwd/bwd, attention",
     mase::bench::register_gemm},
    {"elementwise", "add, mul, bias add, exp, tanh, relu, sums, copies; each vs memcpy",
     mase::bench::register_elementwise},
    {"softmax", "row softmax, fused vs the naive composition; each vs memcpy",
     mase::bench::register_softmax},
    {"sdpa", "attention forward and forward+backward, fused vs the naive composition",
     mase::bench::register_sdpa},
    {"fused", "bias+GELU, dropout+residual+LayerNorm, LayerNorm, AdamW (and, under --precision bf16 on AMX, Linear+GELU in the tile store): fused vs composed, vs memcpy",
     mase::bench::register_fused},
    {"quant", "fake quantization per format, MXINT8 pack/unpack, vs memcpy; QAT step vs plain",
     mase::bench::register_quant},
    {"e2e", "BERT tiny/mini/small training and eval steps at B32 T256: tokens/s, % of sgemm",
     mase::bench::register_e2e},
    {"ladder", "the GEMM ladder: naive -> loops -> blocked -> packed microkernels (-> oneDNN) vs sgemm and FMA peak",
     mase::bench::register_gemm_ladder},
    {"int8", "int8 / MXINT8 Linears computed in integers: GEMMs vs sgemm, eval vs fp32 and fake-quant",
     mase::bench::register_int8},
    // GPU suites (bench/bench_gpu_*.cpp): CUDA events, L2 flushed before each timed call;
    // each registers nothing, with one line on stderr, where no GPU is present
    {"gpu-base", "GPU: device-to-device copy bandwidth, cuBLAS sgemm 4096³ (the GPU's limits)",
     mase::bench::register_gpu_base},
    {"gpu-softmax", "GPU: softmax fwd/bwd vs D2D copy and the naive composition; the kernel ladder",
     mase::bench::register_gpu_softmax},
    {"gpu-sdpa", "GPU: flash attention fwd, fwd+bwd vs the naive composition; peak memory",
     mase::bench::register_gpu_sdpa},
    {"gpu-quant", "GPU: every quantizer and MXINT8 pack/unpack vs the D2D copy, MXINT8 Linear vs cuBLAS, memory",
     mase::bench::register_gpu_quant},
    {"gpu-fused", "GPU: LayerNorm, bias+GELU, bias gradients, embedding gradient, AdamW vs the D2D copy",
     mase::bench::register_gpu_fused},
    {"gpu-step",
     "GPU: a BERT training step profiled per phase and op class: before, fp32, tf32, bf16, graphs",
     mase::bench::register_gpu_step},
};

std::string footer() {
  std::string s = "Suites (in the order they run):\n";
  for (const Suite& suite : kSuites) s += "  " + std::string(suite.name) + "  " + suite.what + "\n";
  s +=
      "\nEvery other flag goes to Google Benchmark, written --flag=value, e.g.\n"
      "  --benchmark_filter=REGEX       run the benchmarks whose name matches\n"
      "  --benchmark_repetitions=5      repeat; with\n"
      "  --benchmark_report_aggregates_only=true  print only mean, median, stddev, cv\n"
      "  --benchmark_enable_random_interleaving=true  shuffle the repetitions of all\n"
      "                                 benchmarks (fairer on a machine with varying load)\n"
      "  --benchmark_format=json        console (default) or json on stdout\n"
      "  --benchmark_out=FILE           also write to FILE (--benchmark_out_format=json)\n"
      "  --benchmark_list_tests         list the names and exit\n"
      "\nCounters: bw = bytes/s (reads + writes), flops = FLOP/s, with decimal prefixes;\n"
      "memcpy_bw = bytes/s of a memcpy of the same bytes timed right after each call,\n"
      "vs_memcpy = bw / memcpy_bw, vs_4096 = flops / flops of sgemm 4096³ in this run,\n"
      "vs_naive = speedup of a fused kernel over the composition of ops it replaces.\n"
      "See docs/benchmarks.md.\n"
      "\nExample:\n"
      "  mase-bench --suite elementwise --threads 2 --benchmark_repetitions=5 \\\n"
      "             --benchmark_report_aggregates_only=true\n"
      "  mase-bench --suite sdpa --plot sdpa.svg\n"
      "      Lab 4.2: fused attention against the naive composition (vs_naive), as bars\n"
      "  mase-bench --e2e --compile --benchmark_filter='bert-tiny'\n"
      "      eager and compiled (graph::compile) training and eval steps side by side\n";
  return s;
}

// The value of --benchmark_<name>=X in `args` (`otherwise` when absent). Our reporters need
// a few of Google Benchmark's flags (formats, output file, interleaving) to set themselves up.
std::string flag(const std::vector<std::string>& args, const std::string& name,
                 const std::string& otherwise) {
  const std::string key = "--benchmark_" + name + "=";
  std::string value = otherwise;
  for (const std::string& a : args)
    if (a.rfind(key, 0) == 0) value = a.substr(key.size());
  return value;
}

// --plot: each benchmark's ratios to its baselines (vs_naive, vs_memcpy, vs_4096, …) as bars,
// one cluster per benchmark, the dashed line at 1 (as fast as the baseline). With repetitions
// the median aggregate is drawn where there is one, else the median of the single runs.
void plot_ratios(const std::vector<mase::bench::RatioReporter::Ratios>& runs,
                 const std::string& path, const std::string& title) {
  std::vector<std::string> names;  // in the order they ran
  std::map<std::string, std::map<std::string, std::vector<double>>> single, median;
  for (const auto& r : runs) {
    if (r.aggregate != "" && r.aggregate != "median") continue;
    auto& into = r.aggregate.empty() ? single : median;
    if (!single.count(r.name) && !median.count(r.name)) names.push_back(r.name);
    for (const auto& [key, v] : r.values) into[r.name][key].push_back(v);
  }
  mase::search::BarChart chart;
  chart.title = title;
  chart.ylabel = "rate / the baseline's rate (1 = as fast)";
  chart.reference = 1;
  std::map<std::string, size_t> series;  // counter -> its index in chart.series
  for (const std::string& name : names) {
    const auto& from = median.count(name) ? median.at(name) : single.at(name);
    // "int8/eval/bert-tiny/int8/min_time:2.000/manual_time" -> "int8/eval/bert-tiny/int8":
    // the parts Google Benchmark appends to a name say how it was timed, not what
    std::string label;
    for (size_t at = 0; at <= name.size();) {
      const size_t end = std::min(name.find('/', at), name.size());
      const std::string part = name.substr(at, end - at);
      if (part != "manual_time" && part != "real_time" && !part.starts_with("min_time:") &&
          !part.starts_with("repeats:") && !part.starts_with("iterations:"))
        label += (label.empty() ? "" : "/") + part;
      at = end + 1;
    }
    const size_t c = chart.categories.size();
    chart.categories.push_back(label);
    for (auto [key, values] : from) {
      if (!series.count(key)) {
        series[key] = chart.series.size();
        chart.series.push_back({key, {}});
      }
      std::sort(values.begin(), values.end());
      auto& column = chart.series[series[key]].values;
      column.resize(c + 1, std::nan(""));
      column[c] = values[values.size() / 2];
    }
  }
  for (auto& s : chart.series) s.values.resize(chart.categories.size(), std::nan(""));
  mase::search::plot_bars(chart, path);
}

// std::cerr less one line: Google Benchmark's "Failed to match any benchmarks against regex: X"
// for a filter that matches nothing, after which it returns 0; main says that in the house
// style instead, and exits 2. Everything else (the machine context, errors) passes through,
// line by line, and on a flush.
class WithoutNoMatchLine : public std::streambuf {
 public:
  explicit WithoutNoMatchLine(std::streambuf* to) : to_(to) {}
  ~WithoutNoMatchLine() override { pass(); }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    line_ += static_cast<char>(c);
    if (c == '\n') pass();
    return c;
  }
  int sync() override {
    if (!std::string_view(kLine).starts_with(line_)) pass();  // not (yet) the line we drop
    return to_->pubsync();
  }

 private:
  static constexpr const char* kLine = "Failed to match any benchmarks against regex: ";
  void pass() {
    if (!line_.starts_with(kLine))
      to_->sputn(line_.data(), static_cast<std::streamsize>(line_.size()));
    line_.clear();
  }
  std::streambuf* to_;
  std::string line_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mase-bench: microbenchmarks of mase-cpp kernels (Google Benchmark)"};
  app.allow_extras();  // --benchmark_* flags pass through to Google Benchmark
  int threads = 0;
  std::vector<std::string> suites;
  std::vector<std::string> names;
  for (const Suite& s : kSuites) names.push_back(s.name);
  app.add_option("--threads", threads, "threads for kernels and OpenBLAS (default: all cores)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--suite", suites, "run only these suites (repeat, or comma-separate)")
      ->delimiter(',')
      ->check(CLI::IsMember(names));
  std::string precision = "fp32";
  app.add_option("--precision", precision,
                 "GEMM arithmetic for every suite: fp32 (default), tf32 (GPU only) or bf16 "
                 "(bf16 operands, fp32 sums; gpu-step sets its own per variant)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  bool e2e = false;
  app.add_flag("--e2e", e2e, "the end-to-end suite only (same as --suite e2e)");
  bool compiled = false;
  app.add_flag("--compile", compiled,
               "e2e: also each step through graph::compile, right after its eager twin "
               "(e2e/<model>/<train|eval>/compiled), and eval with frozen weights "
               "(e2e/<model>/eval/frozen: Linear weights packed once; docs/lab4.md)");
  std::string onednn = mase::cpu::onednn_enabled() ? "on" : "off";
  app.add_option("--onednn", onednn,
                 "large fp32 GEMMs on oneDNN's matmul where this build has it (on), or all on "
                 "OpenBLAS (off): A/B of runtime/cpu/onednn_gemm.h")
      ->check(CLI::IsMember({"on", "off"}));
  std::string amx = "on";
  app.add_option("--amx", amx,
                 "--precision bf16: GEMMs on our AMX-BF16 tiles where the CPU has them (on), or "
                 "on oneDNN's bf16 matmul and the AVX512-BF16 kernel (off): A/B of "
                 "runtime/cpu/bf16_amx.cpp")
      ->check(CLI::IsMember({"on", "off"}));
  std::string bf16_attention = "on";
  app.add_option("--bf16-attention", bf16_attention,
                 "--precision bf16: the attention's products on bf16 operands where the CPU has "
                 "AMX-BF16 or AVX512-BF16 (on), or in fp32 (off): A/B of runtime/cpu/sdpa_amx.h")
      ->check(CLI::IsMember({"on", "off"}));
  std::string packed = "on";
  app.add_option("--packed-gemm", packed,
                 "inference Linears on our packed GEMM where it beats OpenBLAS and oneDNN is off or "
                 "absent (on), or always "
                 "OpenBLAS (off): A/B of runtime/kernels/sgemm_packed.h")
      ->check(CLI::IsMember({"on", "off"}));
  std::string plot;
  app.add_option("--plot", plot,
                 "also draw each benchmark's ratios to its baselines (vs_naive, vs_memcpy, ...) "
                 "as bars: FILE.svg or FILE.png, its numbers and gnuplot script beside it");
  app.footer(footer());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {  // exit 2 like every mase-* tool (tools/cli.h)
    std::fprintf(stderr, "mase-bench: %s (see --help)\n", e.what());
    return 2;
  }

  if (e2e && !suites.empty()) {
    std::fprintf(stderr, "mase-bench: --e2e is --suite e2e; give the suites in one --suite list\n");
    return 2;
  }
  if (e2e) suites.push_back("e2e");
  try {
    if (!plot.empty()) mase::search::check_plot_path(plot, "--plot");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mase-bench: %s\n", e.what());
    return 2;
  }
  if (precision == "tf32") {  // a GPU mode: a CPU suite would quietly time fp32 under its name
    std::string cpu_suite = suites.empty() ? "every suite (the default)" : "";
    for (const std::string& s : suites)
      if (s.rfind("gpu-", 0) != 0 && cpu_suite.empty()) cpu_suite = "suite '" + s + "'";
    if (!cpu_suite.empty()) {
      std::fprintf(stderr, "mase-bench: --precision tf32 is a GPU mode, and %s runs on the CPU "
                   "(give --suite gpu-...; the CPU takes fp32 or bf16)\n", cpu_suite.c_str());
      return 2;
    }
  }
  // Google Benchmark's flags are read (and a bad one refused) before the suites register,
  // which is when the GPU suites say they skip on a machine without a GPU
  std::vector<std::string> rest = app.remaining();
  for (const std::string& a : rest)  // what neither CLI11 nor Google Benchmark takes: one line
    if (a.rfind("--benchmark_", 0) != 0 && a.rfind("--v=", 0) != 0) {
      std::fprintf(stderr, "mase-bench: expected a mase-bench or --benchmark_* flag, got '%s' "
                   "(see --help)\n", a.c_str());
      return 2;
    }
  std::vector<char*> args{argv[0]};
  for (std::string& a : rest) args.push_back(a.data());
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 2;
  if (const std::string filter = flag(rest, "filter", ""); !filter.empty()) {
    regex_t re;  // the library compiles it the same way (POSIX extended) and would run nothing
    const int rc = regcomp(&re, filter.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc == 0) regfree(&re);
    if (rc != 0) {
      std::fprintf(stderr, "mase-bench: --benchmark_filter: expected a regular expression, got "
                   "'%s' (see --help)\n", filter.c_str());
      return 2;
    }
  }
  mase::bench::set_e2e_compiled(compiled);
  try {
    const int n = mase::set_num_threads(threads);
    mase::set_gpu_precision(precision);  // runtime/gpu_math.h: nothing without a GPU
    mase::cpu::set_sgemm_packed_enabled(packed == "on");
    mase::cpu::set_onednn_enabled(onednn == "on");
    mase::cpu::set_amx_bf16_enabled(amx == "on");
    mase::cpu::set_bf16_attention_enabled(bf16_attention == "on");
    // the CPU has no tf32 (refused above for CPU suites)
    mase::set_cpu_gemm_precision(precision == "bf16" ? mase::GemmPrecision::bf16
                                                     : mase::GemmPrecision::fp32);
    for (const Suite& s : kSuites) {
      bool on = suites.empty();
      for (const std::string& want : suites) on = on || want == s.name;
      if (on) s.register_all();
    }


    benchmark::AddCustomContext("mase_threads", std::to_string(n));
    benchmark::AddCustomContext("openblas_core", mase::blas::corename());
    benchmark::AddCustomContext("cpu_isa", mase::isa_summary());
    if (mase::cuda_device_count() > 0) {
      benchmark::AddCustomContext("gpu", mase::bench::gpu_summary());
      benchmark::AddCustomContext("gpu_precision", precision);
    }
    benchmark::AddCustomContext("packed_gemm", packed);
    benchmark::AddCustomContext("gemm_library", mase::gemm_library());
    if (precision == "bf16") benchmark::AddCustomContext("bf16_gemm", mase::cpu_bf16_gemm_path());
    benchmark::AddCustomContext("precision", precision);
    const std::string interleave = flag(rest, "enable_random_interleaving", "false");
    const bool interleaved = interleave == "true" || interleave == "1";
    mase::bench::RatioReporter display(flag(rest, "format", "console"), isatty(STDOUT_FILENO) != 0,
                                       interleaved);
    WithoutNoMatchLine err_buf(std::cerr.rdbuf());
    std::ostream err(&err_buf);
    display.SetErrorStream(&err);  // the file reporter's goes to the same (the library sets it)
    size_t matched = 0;            // (the regex itself was checked above)
    if (flag(rest, "out", "").empty()) {
      matched = benchmark::RunSpecifiedBenchmarks(&display);
    } else {  // --benchmark_out=FILE: the file gets the ratios too (the library opens it)
      mase::bench::RatioReporter file(flag(rest, "out_format", "json"), false, interleaved);
      matched = benchmark::RunSpecifiedBenchmarks(&display, &file);
    }
    benchmark::Shutdown();
    err.flush();
    // nothing registered (GPU suites without a GPU): each suite has said so, and no filter is
    // to blame; something registered but nothing matched: the filter is (a typo, another suite)
    if (matched == 0 && mase::bench::added_count() > 0) {
      std::string which;
      for (const std::string& s : suites) which += (which.empty() ? "" : ",") + s;
      const std::string of = which.empty() ? "any suite" : "suite(s) " + which;
      const std::string list = which.empty() ? "" : "--suite " + which + " ";
      std::fprintf(stderr, "mase-bench: --benchmark_filter: expected a regex matching a benchmark "
                   "of %s, got '%s' (list them with %s--benchmark_list_tests)\n", of.c_str(),
                   flag(rest, "filter", "").c_str(), list.c_str());
      return 2;
    }
    if (!plot.empty()) {
      plot_ratios(display.ratios(), plot,
                  mase::cat("mase-bench: each benchmark against its baseline; ",
                            mase::cpu_features().brand, ", ", n, n == 1 ? " thread" : " threads"));
      std::cout << "plot: " << plot << " (data " << plot << ".dat, script " << plot << ".gp)\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "mase-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
