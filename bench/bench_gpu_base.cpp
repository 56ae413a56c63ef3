// bench/bench_gpu_base.cpp — the gpu-base suite: the GPU's own limits, measured in the same run
// as every other GPU figure so those can be read as ratios to them.
//
//   gpu-base/copy/<MB>    device-to-device copy of a buffer (reads + writes = 2 × its bytes):
//                         the memory-bound limit; every memory-bound GPU kernel is also paired
//                         call by call with a copy of its own bytes (gpu_time_vs_copy)
//   gpu-base/sgemm/4096   cuBLAS sgemm 4096³ in fp32 (no TF32): the fp32 compute limit as
//                         cuBLAS reaches it; GEMM-bound kernels are paired with cuBLAS calls
// Read next: bench/gpu_common.h.
#include <cmath>

#include "bench/gpu_common.h"
#include "runtime/kernels/gpu_timing.h"
#include "runtime/kernels/matmul.h"

namespace mase::bench {

void register_gpu_base() {
  if (!gpu_suite_available("gpu-base")) return;
  for (int64_t mb : {64, 1024}) {
    add(cat("gpu-base/copy/", mb, "MB"), [mb](benchmark::State& st) {
      const int64_t n = mb << 20;
      Tensor src = Tensor::full({n}, 3, DType::u8).to(Device::cuda());
      Tensor dst = Tensor::zeros({n}, DType::u8).to(Device::cuda());
      gpu_time_paired(st, [&] {
        cuda::copy_bytes(dst.raw_data(), src.raw_data(), static_cast<size_t>(n));
      }, {});
      set_bytes(st, 2.0 * static_cast<double>(n));
    }, Timing::manual);
  }
  add("gpu-base/sgemm/4096", [](benchmark::State& st) {
    const int64_t n = 4096;
    Tensor a = uniform_tensor({n, n}, 1).to(Device::cuda());
    Tensor b = uniform_tensor({n, n}, 2).to(Device::cuda());
    Tensor c = Tensor::zeros({n, n}, DType::f32).to(Device::cuda());
    const bool ok = validate_once(st, "gpu-base/sgemm/4096", [&]() -> std::string {
      cuda::gemm(false, false, n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n, 0.f,
                 c.data<float>(), n);
      Tensor got = c.to(Device::cpu()), A = a.to(Device::cpu()), B = b.to(Device::cpu());
      const float *pa = A.data<float>(), *pb = B.data<float>(), *pc = got.data<float>();
      for (int64_t s = 0; s < 16; ++s) {  // 16 entries against a double dot product
        const int64_t i = (s * 977) % n, j = (s * 1571 + 3) % n;
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < n; ++k) {
          ref += double(pa[i * n + k]) * pb[k * n + j];
          mag += std::abs(double(pa[i * n + k]) * pb[k * n + j]);
        }
        if (!(std::abs(pc[i * n + j] - ref) <= 1e-5 * mag + 1e-6))
          return cat("C[", i, ", ", j, "] = ", pc[i * n + j], ", expected ", ref);
      }
      return "";
    });
    if (!ok) return;
    gpu_time_paired(st, [&] {
      cuda::gemm(false, false, n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n, 0.f,
                 c.data<float>(), n);
    }, {});
    set_flops(st, 2.0 * n * n * n);
  }, Timing::manual);
}

}  // namespace mase::bench
