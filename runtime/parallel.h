// runtime/parallel.h — the one thread pool (oneTBB) and the one thread count.
//
// Every parallel loop in the CPU kernels goes through parallel_for below, on oneTBB's pool.
// OpenBLAS has its own threads for GEMM; set_num_threads gives both the same count. A GEMM
// called inside a TBB task runs with OpenBLAS set to one thread (SerialBlas below, around
// runtime/cpu/sdpa.cpp's kernels), so the two pools never run nested and the machine is never
// oversubscribed (2 pools × 2 threads on 2 cores would halve throughput).
// oneDNN's GEMMs run on this pool itself, one OpenMP thread a block (runtime/cpu/onednn_gemm.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "runtime/gemm_precision.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace mase {

// Threads for TBB loops and OpenBLAS. 0 = all cores (the default). Call once, early
// (mase-train's --threads does). Returns the count now in effect. ConfigError above
// kMaxThreadsPerCore x the cores (100,000 threads hung OpenBLAS's shutdown under a memory limit).
constexpr int kMaxThreadsPerCore = 4;
int set_num_threads(int n);
int num_threads();
// Which GEMM library and kernels the CPU backend runs: "OpenBLAS (Haswell kernels)", or with
// oneDNN "oneDNN 2.6.3 matmul for the large ones, OpenBLAS (SkylakeX kernels) for the rest".
std::string gemm_library();
// What --precision bf16 runs its CPU GEMMs on, as one phrase: "oneDNN on AMX-BF16 for the
// large ones, …", "AVX512-BF16 for x·Wᵀ, emulated elsewhere" or "emulated: no AVX512-BF16 here".
std::string cpu_bf16_gemm_path();
// What --precision bf16 runs the fused attention's products on (runtime/cpu/sdpa_amx.h): "bf16
// products on AMX-BF16 tiles", "bf16 products with vdpbf16ps" or "fp32 products (no bf16 units
// here, or switched off)".
std::string cpu_bf16_attention_path();

// The precision of every CPU fp32 GEMM (mase-train --precision; runtime/cpu/matmul.cpp): fp32,
// or bf16 — both operands rounded to bfloat16 (round to nearest even, runtime/kernels/bf16.h),
// products and sums in fp32 (runtime/gemm_precision.h). On CPUs with AVX512-BF16 the y = x·Wᵀ
// products (no transpose of x, alpha 1, beta 0) run vdpbf16ps; everywhere else the rounding is
// emulated (round copies, fp32 GEMM), which has the semantics and none of the speed.
// Process-wide, like the thread count; f64 GEMMs are never rounded. tf32: ConfigError (GPU only).
void set_cpu_gemm_precision(GemmPrecision p);
GemmPrecision cpu_gemm_precision();

// A scope in which this thread's parallel_for calls run inline, on this thread alone: for a
// task that is itself one of many in an outer parallel loop and calls kernels that would
// otherwise split their small piece again (the FFN in row chunks: autograd/ops/gelu.cpp's
// bias_gelu_in_row_chunks, called by models/fusion.h's ffn_in_chunks).
class SerialRegion {
 public:
  SerialRegion() { ++depth(); }
  ~SerialRegion() { --depth(); }
  SerialRegion(const SerialRegion&) = delete;
  SerialRegion& operator=(const SerialRegion&) = delete;
  static bool active() { return depth() > 0; }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

// A scope in which OpenBLAS runs on one thread: around a parallel_for whose tasks call GEMMs
// (runtime/cpu/sdpa.cpp's f64 tile products). openblas_set_num_threads is process-wide (one
// global count, read by every GEMM of every thread), not per thread, so scopes on several
// threads at once (two sdpa calls from two threads) share it: a count of open scopes under
// set_num_threads' lock, OpenBLAS set to 1 by the first scope to open and back to
// num_threads() by the last to close. Saving and restoring per scope would interleave (A sets
// 1, B sets 1, A restores 4 while B's tasks still run GEMMs: oversubscribed; a restore could
// also undo a set_num_threads made meanwhile). set_num_threads inside a scope takes effect for
// TBB at once and for OpenBLAS when the last scope closes. While any scope is open, every
// GEMM in the process runs on one OpenBLAS thread, even one called outside a TBB task.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
  static int open_scopes();  // scopes open now, on all threads (tests)
};

// f(lo, hi) over [begin, end) in chunks cut by TBB, which splits a range only while it is
// longer than `grain` (so a chunk may be shorter than grain; nothing may rely on its length).
// Runs inline when the range is at most `grain` long (small tensors pay no scheduling cost),
// when num_threads() is 1, and inside a SerialRegion.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (end - begin <= grain || num_threads() == 1 || SerialRegion::active()) {
    f(begin, end);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(begin, end, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

// Elementwise kernels use chunks of this many elements: big enough to amortise a task
// (~10 µs of work), small enough to balance 2..64 threads on the tensors of BERT.
constexpr int64_t kGrainElems = 32 * 1024;

}  // namespace mase
