// bench/peak.cpp — see peak.h. Each loop: two operand registers (30, 31) set once, 24
// accumulators (0–23; 12 for AVX2, which has 16 registers) zeroed, then advanced once per
// iteration (zeroed: leftover register contents could be subnormal floats, which an FMA
// handles in a microcode assist a hundred times slower).
#include "bench/peak.h"

#include <chrono>
#include <thread>
#include <vector>

namespace mase::bench {
namespace {

const float kA = 0.999f, kB = 1e-7f;
const int32_t kBytes = 0x01020304;

__attribute__((target("avx512f"))) void fma_avx512(int64_t n) {
  __asm__ volatile(
      "vbroadcastss %[a], %%zmm30\n\t"
      "vbroadcastss %[b], %%zmm31\n\t"
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
      "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
      "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
      "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
      "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
      "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
      "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
      "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
      "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
      "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
      "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
      "vpxord %%zmm12, %%zmm12, %%zmm12\n\t"
      "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
      "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
      "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
      "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
      "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
      "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
      "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
      "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
      "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
      "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
      "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
      "1:\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm0\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm1\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm2\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm3\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm4\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm5\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm6\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm7\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm8\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm9\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm10\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm11\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm12\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm13\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm14\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm15\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm16\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm17\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm18\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm19\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm20\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm21\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm22\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm23\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [a] "m"(kA), [b] "m"(kB)
      : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23", "zmm30", "zmm31", "cc");
}

void fma_avx2(int64_t n) {
  __asm__ volatile(
      "vbroadcastss %[a], %%ymm14\n\t"
      "vbroadcastss %[b], %%ymm15\n\t"
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
      "vpxor %%ymm1, %%ymm1, %%ymm1\n\t"
      "vpxor %%ymm2, %%ymm2, %%ymm2\n\t"
      "vpxor %%ymm3, %%ymm3, %%ymm3\n\t"
      "vpxor %%ymm4, %%ymm4, %%ymm4\n\t"
      "vpxor %%ymm5, %%ymm5, %%ymm5\n\t"
      "vpxor %%ymm6, %%ymm6, %%ymm6\n\t"
      "vpxor %%ymm7, %%ymm7, %%ymm7\n\t"
      "vpxor %%ymm8, %%ymm8, %%ymm8\n\t"
      "vpxor %%ymm9, %%ymm9, %%ymm9\n\t"
      "vpxor %%ymm10, %%ymm10, %%ymm10\n\t"
      "vpxor %%ymm11, %%ymm11, %%ymm11\n\t"
      "1:\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [a] "m"(kA), [b] "m"(kB)
      : "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9", "ymm10", "ymm11", "ymm12", "ymm13", "ymm14", "ymm15", "cc");
}

__attribute__((target("avx512f,avx512vnni"))) void vnni_avx512(int64_t n) {
  __asm__ volatile(
      "vpbroadcastd %[a], %%zmm30\n\t"
      "vpbroadcastd %[b], %%zmm31\n\t"
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
      "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
      "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
      "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
      "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
      "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
      "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
      "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
      "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
      "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
      "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
      "vpxord %%zmm12, %%zmm12, %%zmm12\n\t"
      "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
      "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
      "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
      "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
      "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
      "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
      "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
      "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
      "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
      "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
      "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
      "1:\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm0\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm1\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm2\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm3\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm4\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm5\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm6\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm7\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm8\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm9\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm10\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm11\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm12\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm13\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm14\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm15\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm16\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm17\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm18\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm19\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm20\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm21\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm22\n\t"
      "vpdpbusd %%zmm30, %%zmm31, %%zmm23\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [a] "m"(kBytes), [b] "m"(kBytes)
      : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23", "zmm30", "zmm31", "cc");
}

}  // namespace

double peak_ops_per_s(PeakOp op, int threads, int64_t iters) {
  if (iters < 1 || threads < 1) return 0.0;  // the loops count down to 0: at least one pass
  void (*loop)(int64_t) = op == PeakOp::fma_avx512 ? fma_avx512 : op == PeakOp::fma_avx2 ? fma_avx2 : vnni_avx512;
  // multiply-adds per iteration: accumulators × lanes
  const double macs = op == PeakOp::fma_avx512 ? 24.0 * 16 : op == PeakOp::fma_avx2 ? 12.0 * 8 : 24.0 * 64;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(loop, iters);
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * macs * double(iters) * threads / s;
}

}  // namespace mase::bench
