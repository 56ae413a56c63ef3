// bench/gpu_common.h — what every GPU suite of mase-bench uses (bench/bench_gpu_*.cpp): CUDA
// event timing, an L2 flush before every timed call, and the pairing rule of common.h.
//
// Every GPU benchmark body follows common.h's three steps, on CUDA tensors:
//   1. build seeded inputs on the CPU and copy them to the GPU (Tensor::to(Device::cuda())),
//   2. validate the GPU result once against the CPU kernel or reference (validate_once),
//   3. time with gpu_time_vs_copy (memory-bound kernels: paired with a device-to-device copy
//      of the same bytes) or gpu_time_paired (GEMM-bound ones: paired with cuBLAS or the
//      naive composition), registered with add(name, body, Timing::manual).
// Each timed call is: flush L2 -> event -> kernel -> event, so a figure is the GPU's own time
// for the kernel with its inputs in HBM, not the launch (host clocks see only the launch).
// Each baseline is timed the same way right after, so ratios compare the same moments.
//
// A GPU suite registers nothing on a machine without a GPU and says so in one line
// (gpu_suite_available). Read next: bench/bench_gpu_base.cpp, the smallest GPU suite (copy and sgemm).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bench/common.h"

namespace mase::bench {

// True when a GPU is present; otherwise prints "mase-bench: suite <name> skipped (no GPU)" to
// stderr once and returns false, and the suite registers nothing.
bool gpu_suite_available(const char* suite);

// Times `kernel` on the GPU, each call after an L2 flush, and every baseline right after it the
// same way. Sets the manual iteration time (register with Timing::manual) and, per baseline, a
// counter baseline.ratio = time(baseline) / time(kernel). Returns each baseline's seconds.
std::vector<double> gpu_time_paired(benchmark::State& st, const std::function<void()>& kernel,
                                    const std::vector<Baseline>& baselines);

// A memory-bound kernel that reads + writes `bytes`: paired with a device-to-device copy whose
// reads + writes are the same bytes. Counters: bw, copy_bw and vs_copy = bw / copy_bw (1.0 = as
// fast as copying its bytes), plus `also`'s ratios (e.g. {{naive, "vs_naive"}}).
void gpu_time_vs_copy(benchmark::State& st, int64_t bytes, const std::function<void()>& kernel,
                      const std::vector<Baseline>& also = {});

// "NVIDIA H100 80GB HBM3, 132 SMs, cc 9.0, L2 50 MB, 79.1 GiB, driver 13.0, runtime 13.0"
std::string gpu_summary(int device = 0);

}  // namespace mase::bench
