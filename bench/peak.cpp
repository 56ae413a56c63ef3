// bench/peak.cpp — see peak.h. Each loop: two operand registers set once (zmm30/31, ymm14/15),
// the accumulators (zmm0–23; ymm0–11 for AVX2, which has 16 registers) zeroed, then each
// advanced once per iteration. Zeroed: leftover register contents could be subnormal floats,
// which an FMA handles in a microcode assist a hundred times slower.
#include "bench/peak.h"

#include <chrono>
#include <thread>
#include <vector>

#include "runtime/parallel.h"

namespace mase::bench {
namespace {

const float kA = 0.999f, kB = 1e-7f;  // acc = acc·a + b stays a normal float
const int32_t kBytes = 0x01020304;

// "OP %%R30, %%R31, %%Ri" for i = 0..23 (zmm) or 0..11 (ymm, operands 14 and 15): the string
// pasting below spells out the 24 (or 12) instructions of one iteration.
#define MASE_X4(F, a, b, c, d) F(a) F(b) F(c) F(d)
#define MASE_R12(F) MASE_X4(F, 0, 1, 2, 3) MASE_X4(F, 4, 5, 6, 7) MASE_X4(F, 8, 9, 10, 11)
#define MASE_R24(F) MASE_R12(F) MASE_X4(F, 12, 13, 14, 15) MASE_X4(F, 16, 17, 18, 19) MASE_X4(F, 20, 21, 22, 23)
#define MASE_ZERO_Z(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define MASE_FMA_Z(i) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define MASE_VNNI_Z(i) "vpdpbusd %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define MASE_ZERO_Y(i) "vpxor %%ymm" #i ", %%ymm" #i ", %%ymm" #i "\n\t"
#define MASE_FMA_Y(i) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #i "\n\t"
#define MASE_ZMM_CLOBBERS                                                                       \
  "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10",      \
      "zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", \
      "zmm21", "zmm22", "zmm23", "zmm30", "zmm31", "cc"

// One zmm loop: broadcast the operands with BCAST, zero the accumulators, then n iterations of
// OP on all 24.
#define MASE_PEAK_LOOP_ZMM(BCAST, OP, A, B)                                         \
  __asm__ volatile(BCAST " %[a], %%zmm30\n\t" BCAST " %[b], %%zmm31\n\t" MASE_R24(MASE_ZERO_Z) \
                   "1:\n\t" MASE_R24(OP) "dec %[n]\n\t"                                 \
                   "jnz 1b\n\t"                                                          \
                   : [n] "+r"(n)                                                          \
                   : [a] "m"(A), [b] "m"(B)                                               \
                   : MASE_ZMM_CLOBBERS)

__attribute__((target("avx512f"))) void fma_avx512(int64_t n) {
  MASE_PEAK_LOOP_ZMM("vbroadcastss", MASE_FMA_Z, kA, kB);
}

void fma_avx2(int64_t n) {
  __asm__ volatile("vbroadcastss %[a], %%ymm14\n\t"
                   "vbroadcastss %[b], %%ymm15\n\t" MASE_R12(MASE_ZERO_Y)
                   "1:\n\t" MASE_R12(MASE_FMA_Y)
                   "dec %[n]\n\t"
                   "jnz 1b\n\t"
                   : [n] "+r"(n)
                   : [a] "m"(kA), [b] "m"(kB)
                   : "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8",
                     "ymm9", "ymm10", "ymm11", "ymm14", "ymm15", "cc");
}

__attribute__((target("avx512f,avx512vnni"))) void vnni_avx512(int64_t n) {
  MASE_PEAK_LOOP_ZMM("vpbroadcastd", MASE_VNNI_Z, kBytes, kBytes);
}

}  // namespace

double peak_ops_per_s(PeakOp op, int threads, int64_t iters) {
  if (iters < 1 || threads < 1) return 0.0;  // the loops count down to 0: at least one pass
  void (*loop)(int64_t) = op == PeakOp::fma_avx512 ? fma_avx512
                          : op == PeakOp::fma_avx2 ? fma_avx2
                                                   : vnni_avx512;
  // multiply-adds per iteration: accumulators × lanes
  const double macs = op == PeakOp::fma_avx512 ? 24.0 * 16 : op == PeakOp::fma_avx2 ? 12.0 * 8 : 24.0 * 64;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(loop, iters);
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * macs * double(iters) * threads / s;
}

void time_peak(benchmark::State& st, PeakOp op) {
  double ops = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    ops = peak_ops_per_s(op, num_threads(), int64_t(1) << 20);
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  st.counters["flops"] = ops;
}

}  // namespace mase::bench
