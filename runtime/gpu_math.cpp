// runtime/gpu_math.cpp — see gpu_math.h.
#include "runtime/gpu_math.h"

#include <atomic>
#include <cstdlib>

#include "cuda/memory.h"
#include "runtime/error.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sdpa.h"

namespace mase {

namespace {
std::atomic<bool> g_deterministic{false};

// MASE_SDPA_MATH=fp32|tf32x3|tf32, or the precision's own choice when unset
SdpaMath attention_math(const std::string& precision) {
  const char* e = std::getenv("MASE_SDPA_MATH");
  const std::string v = e && *e ? e : precision == "fp32" ? "fp32" : "tf32";
  MASE_CHECK(v == "fp32" || v == "tf32x3" || v == "tf32", ConfigError,
             "[MASE_SDPA_MATH] expected fp32, tf32x3 or tf32, got '", v, "'");
  return v == "fp32" ? SdpaMath::fp32 : v == "tf32x3" ? SdpaMath::tf32x3 : SdpaMath::tf32;
}
}  // namespace

void set_gpu_precision(const std::string& precision) {
  MASE_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16", ConfigError,
             "[precision] expected fp32, tf32 or bf16, got '", precision, "'");
  const SdpaMath attention = attention_math(precision);  // checked on every machine
  if (!cuda::built || cuda::device_count() == 0) return;
  cuda::set_gemm_precision(precision == "tf32"   ? GemmPrecision::tf32
                           : precision == "bf16" ? GemmPrecision::bf16
                                                 : GemmPrecision::fp32);
  sdpa_cuda_math() = attention;
}

const char* gpu_attention_math() {
  switch (sdpa_cuda_math()) {
    case SdpaMath::fp32: return "fp32 (CUDA cores)";
    case SdpaMath::tf32: return "on TF32 tensor cores";
    case SdpaMath::tf32x3: return "on tensor cores, tf32x3";
  }
  return "?";
}

void set_deterministic(bool on) { g_deterministic.store(on); }
bool deterministic() { return g_deterministic.load(); }

}  // namespace mase
