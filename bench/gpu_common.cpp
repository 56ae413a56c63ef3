// bench/gpu_common.cpp — CUDA-event timing for the GPU suites (see gpu_common.h).
#include "bench/gpu_common.h"

#include <cstdio>
#include <set>

#include "runtime/device.h"
#include "runtime/kernels/gpu_timing.h"
#include "runtime/tensor.h"

namespace mase::bench {
namespace {

// Two events for the life of the process: created on first use, on the GPU of the tensors.
struct Events {
  void* start = cuda::event_create();
  void* stop = cuda::event_create();
};
Events& events() {
  static Events e;
  return e;
}

// GPU milliseconds of one call of `fn`, its inputs evicted from L2 first.
double time_one_ms(const std::function<void()>& fn) {
  Events& e = events();
  cuda::flush_l2();
  cuda::event_record(e.start);
  fn();
  cuda::event_record(e.stop);
  return cuda::event_elapsed_ms(e.start, e.stop);
}

}  // namespace

bool gpu_suite_available(const char* suite) {
  if (cuda_device_count() > 0) return true;
  static std::set<std::string> said;
  if (said.insert(suite).second)
    std::fprintf(stderr, "mase-bench: suite %s skipped (no GPU%s)\n", suite,
                 cuda_built() ? "" : "; this build has no CUDA");
  return false;
}

std::vector<double> gpu_time_paired(benchmark::State& st, const std::function<void()>& kernel,
                                    const std::vector<Baseline>& baselines) {
  double kernel_s = 0;
  std::vector<double> baseline_s(baselines.size(), 0.0);
  for (auto _ : st) {
    const double k = time_one_ms(kernel) * 1e-3;
    st.SetIterationTime(k);
    kernel_s += k;
    for (size_t i = 0; i < baselines.size(); ++i)
      baseline_s[i] += time_one_ms(baselines[i].run) * 1e-3;
  }
  for (size_t i = 0; i < baselines.size(); ++i)
    st.counters[baselines[i].ratio] = kernel_s > 0 ? baseline_s[i] / kernel_s : 0.0;
  return baseline_s;
}

void gpu_time_vs_copy(benchmark::State& st, int64_t bytes, const std::function<void()>& kernel,
                      const std::vector<Baseline>& also) {
  const int64_t n = bytes / 2;  // the copy reads n bytes and writes n
  Tensor src = Tensor::full({n}, 7, DType::u8).to(Device::cuda());
  Tensor dst = Tensor::zeros({n}, DType::u8).to(Device::cuda());
  std::vector<Baseline> baselines{{[&] {
    // cudaMemcpyAsync on the stream: the driver's copy, not our strided copy kernel (which
    // moves one byte per thread for u8 and reached a sixth of the bandwidth on an H100)
    cuda::copy_bytes(dst.raw_data(), src.raw_data(), static_cast<size_t>(n));
  }, "vs_copy"}};   // same bytes: the time ratio is bw / copy_bw
  baselines.insert(baselines.end(), also.begin(), also.end());
  const double copy_s = gpu_time_paired(st, kernel, baselines)[0];
  set_bytes(st, static_cast<double>(bytes));
  const double moved = static_cast<double>(bytes) * static_cast<double>(st.iterations());
  st.counters["copy_bw"] = copy_s > 0 ? moved / copy_s : 0.0;
}

std::string gpu_summary(int device) {
  const cuda::GpuInfo g = cuda::gpu_info(device);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s, %d SMs, cc %d.%d, L2 %zu MB, %.1f GiB, driver %d.%d, runtime %d.%d",
                g.name.c_str(), g.sm_count, g.cc_major, g.cc_minor, g.l2_bytes >> 20,
                static_cast<double>(g.total_bytes) / (1 << 30), g.driver_version / 1000,
                (g.driver_version % 1000) / 10, g.runtime_version / 1000,
                (g.runtime_version % 1000) / 10);
  return buf;
}

}  // namespace mase::bench
