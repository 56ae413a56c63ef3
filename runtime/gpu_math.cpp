// runtime/gpu_math.cpp — see gpu_math.h.
#include "runtime/gpu_math.h"

#include <atomic>

#include "cuda/memory.h"
#include "runtime/error.h"
#include "runtime/kernels/matmul.h"

namespace mase {

namespace {
std::atomic<bool> g_deterministic{false};
}  // namespace

void set_gpu_gemm_precision(const std::string& precision) {
  MASE_CHECK(precision == "fp32" || precision == "tf32", ConfigError,
             "[precision] expected fp32 or tf32, got '", precision, "'");
  if (!cuda::built || cuda::device_count() == 0) return;
  cuda::set_gemm_precision(precision == "tf32" ? GemmPrecision::tf32 : GemmPrecision::fp32);
}

void set_deterministic(bool on) { g_deterministic.store(on); }
bool deterministic() { return g_deterministic.load(); }

}  // namespace mase
