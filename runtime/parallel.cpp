// runtime/parallel.cpp — thread count shared by oneTBB and OpenBLAS (see parallel.h).
#include "runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include <tbb/global_control.h>

#include "runtime/cpu/blas.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/sdpa_amx.h"
#include "runtime/kernels/bf16.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"

namespace mase {
namespace {
std::mutex g_mu;
std::unique_ptr<tbb::global_control> g_control;
std::atomic<int> g_threads{0};  // 0 until set: then the hardware count (read without g_mu)
// OpenBLAS's thread count as last set, and the SerialBlas scopes open (both under g_mu)
int g_blas_threads = 0;
int g_serial_blas_scopes = 0;
std::atomic<GemmPrecision> g_precision{GemmPrecision::fp32};
}  // namespace

void set_cpu_gemm_precision(GemmPrecision p) {
  MASE_CHECK(p != GemmPrecision::tf32, ConfigError,
             "[precision] expected fp32 or bf16 on the CPU, got tf32 (a GPU tensor-core mode)");
  g_precision = p;
}
GemmPrecision cpu_gemm_precision() { return g_precision; }

int set_num_threads(int n) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  MASE_CHECK(n <= kMaxThreadsPerCore * cores, ConfigError, "[threads] expected --threads <= ",
             kMaxThreadsPerCore, " x ", cores, " cores = ", kMaxThreadsPerCore * cores, ", got ", n,
             " (0 = all cores)");
  std::lock_guard lock(g_mu);
  if (n <= 0) n = cores;
  g_control.reset();  // only one global_control of a kind may be active
  g_control = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    static_cast<size_t>(n));
  if (g_serial_blas_scopes == 0) {  // else the last scope to close sets it (parallel.h)
    blas::set_num_threads(n);
    g_blas_threads = n;
  }
  g_threads = n;
  return n;
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

SerialBlas::SerialBlas() {
  num_threads();  // the first call sets the count, under g_mu: before we take it
  std::lock_guard lock(g_mu);
  if (g_serial_blas_scopes == 0 && g_blas_threads != 1) {
    blas::set_num_threads(1);  // may throw (OpenBLAS missing): then no scope was opened
    g_blas_threads = 1;
  }
  ++g_serial_blas_scopes;
}

SerialBlas::~SerialBlas() {
  std::lock_guard lock(g_mu);
  if (--g_serial_blas_scopes > 0 || g_blas_threads == g_threads) return;
  try {
    blas::set_num_threads(g_threads);
    g_blas_threads = g_threads;
  } catch (...) {  // OpenBLAS was loaded when the scope opened: cannot fail; never throw here
  }
}

int SerialBlas::open_scopes() {
  std::lock_guard lock(g_mu);
  return g_serial_blas_scopes;
}

std::string gemm_library() {
  const std::string blas = "OpenBLAS (" + blas::corename() + " kernels)";
  const std::string dnnl = cpu::onednn_version();  // runtime/cpu/onednn_gemm.h
  if (dnnl.empty() || !cpu::onednn_enabled()) return blas;
  return dnnl + " matmul for the large ones" +
         (cpu::openblas_narrower_than_cpu() ? " (all of them: OpenBLAS's kernels are narrower than this CPU), " : ", ") +
         blas + " for the rest";
}

std::string cpu_bf16_gemm_path() {
  const CpuFeatures& f = cpu_features();
  const bool vdpbf16 = f.avx512() && f.avx512_bf16;
  if (cpu::amx_bf16_active())
    return cat("our AMX-BF16 tiles (runtime/cpu/bf16_amx.cpp) from ", cpu::kAmxMinWork,
               " multiply-adds, ",
               vdpbf16 ? "AVX512-BF16 for smaller x·Wᵀ, " : "", "emulated elsewhere");
  if (cpu::onednn_bf16_active())
    return cat("oneDNN on ", f.amx_bf16 ? "AMX-BF16" : vdpbf16 ? "AVX512-BF16" : "its emulation",
               " for the large ones, ", vdpbf16 ? "AVX512-BF16 for x·Wᵀ, " : "",
               "emulated elsewhere");
  return vdpbf16 ? "AVX512-BF16 for x·Wᵀ, emulated elsewhere" : "emulated: no AVX512-BF16 here";
}

std::string cpu_bf16_attention_path() {
  if (!cpu::bf16_attention_units()) return "fp32 products (no bf16 units here, or switched off)";
  return cpu::amx_bf16_active() ? "bf16 products on AMX-BF16 tiles"
                                : "bf16 products with vdpbf16ps";
}

}  // namespace mase
