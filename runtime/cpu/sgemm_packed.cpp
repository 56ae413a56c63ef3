// runtime/cpu/sgemm_packed.cpp — the packed fp32 GEMM around its microkernels: run-time ISA
// choice, packing B once, the loops and threads (see runtime/kernels/sgemm_packed.h).
//
// Loops (GotoBLAS's): parallel over tasks = (MC rows of A) × (a range of B's panels); in a task
//   for each slice of KC values of k        A's MC × KC block, packed (768 KB), stays in L2
//     for each panel                        its KC × nr slice (128 KB) streams from L2/L3,
//                                           prefetched a few k steps ahead by the microkernel
//       for each MR rows: one microkernel call over the slice, continuing C's fma chains
// A is packed per slice, MR rows k-major ([k][MR]), so the microkernel's 12 broadcasts per k
// read one cache line in order instead of 12 rows in 12 streams (and need one address
// register, not 12).
//
// The block sizes, and what each bought (C = A·Bᵀ, 2048 × 4096 × 4096, one thread of the
// 2-core Cascade Lake, against OpenBLAS sgemm in the same run; docs/performance.md):
//   MC 96,  KC 256,  no prefetch     0.64 of sgemm   B's slice (32 KB) was meant to sit in L1,
//                                                    but A and C evict it: loads wait on L2
//   MC 96,  KC 256,  B prefetched    0.80            the wait is gone; now the C tile, loaded
//                                                    and stored once per slice, costs
//   MC 96,  KC 1024, B prefetched    0.92            4× fewer passes over C
//   MC 192, KC 1024, B prefetched    0.98            each panel slice fetched into L2 serves
//                                                    twice the rows
// Once B is prefetched it no longer has to fit L1, and that is what frees KC to grow. The sum
// of every element stays Σ_k in k order (a slice continues the previous one's fma chain), so
// the block sizes never change a bit of the result.
#include "runtime/kernels/sgemm_packed.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "runtime/cpu/sgemm_tile.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/parallel.h"

namespace mase::cpu {

namespace {
std::atomic<bool> g_enabled{true};
}
void set_sgemm_packed_enabled(bool on) { g_enabled = on; }
bool sgemm_packed_enabled() { return g_enabled; }

const char* f32_isa_name(F32Isa isa) { return isa == F32Isa::avx512 ? "avx512" : "avx2"; }

bool f32_isa_supported(F32Isa isa) {
  const CpuFeatures& f = cpu_features();
  return isa == F32Isa::avx512 ? f.avx512() : (f.avx2 && f.fma);
}

F32Isa f32_isa_best() { return f32_isa_supported(F32Isa::avx512) ? F32Isa::avx512 : F32Isa::avx2; }

F32PackedB sgemm_pack_b(const float* B, int64_t ldb, int64_t N, int64_t K, F32Isa isa) {
  MASE_CHECK(N >= 0 && K >= 0, ShapeError, "[sgemm_pack_b] expected sizes ≥ 0, got N=", N,
             " K=", K);
  MASE_CHECK(f32_isa_supported(isa), ConfigError, "[sgemm_pack_b] this CPU cannot run the ",
             f32_isa_name(isa), " kernel");
  F32PackedB p;
  p.isa = isa;
  p.N = N;
  p.K = K;
  p.nr = isa == F32Isa::avx512 ? kSgemmAvx512NR : kSgemmAvx2NR;
  const int64_t nr = p.nr;
  p.data.assign(size_t(p.panels() * K * nr), 0.0f);
  parallel_for(0, p.panels(), 1, [&](int64_t p0, int64_t p1) {
    for (int64_t pan = p0; pan < p1; ++pan) {
      float* dst = p.data.data() + pan * K * nr;
      const int64_t cols = std::min(nr, N - pan * nr);
      for (int64_t c = 0; c < cols; ++c) {
        const float* src = B + (pan * nr + c) * ldb;
        for (int64_t k = 0; k < K; ++k) dst[k * nr + c] = src[k];
      }
    }
  });
  return p;
}

void sgemm_packed(float* C, int64_t ldc, const float* A, int64_t lda, int64_t M,
                  const F32PackedB& B, const float* bias) {
  const int64_t N = B.N, K = B.K;
  if (M <= 0 || N == 0) return;
  MASE_CHECK(f32_isa_supported(B.isa), ConfigError, "[sgemm_packed] B was packed for ",
             f32_isa_name(B.isa), ", which this CPU cannot run");
  const bool wide = B.isa == F32Isa::avx512;
  const int64_t MR = wide ? kSgemmAvx512MR : kSgemmAvx2MR, nr = B.nr, MC = kSgemmMC, KC = kSgemmKC;
  const int64_t mblocks = (M + MC - 1) / MC, panels = B.panels();
  const int64_t want = 4 * std::max(1, num_threads());
  const int64_t split = std::clamp<int64_t>((want + mblocks - 1) / mblocks, 1, panels);
  const int64_t per_chunk = (panels + split - 1) / split, chunks = (panels + per_chunk - 1) / per_chunk;
  parallel_for(0, mblocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> apack;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t m0 = (task / chunks) * MC, mc = std::min(MC, M - m0);
      const int64_t pa = (task % chunks) * per_chunk, pb = std::min(panels, pa + per_chunk);
      for (int64_t k0 = 0; k0 < std::max<int64_t>(K, 1); k0 += KC) {
        const int64_t kc = std::min(KC, K - k0);
        const bool last = k0 + KC >= K;
        // pack rows [m0, m0 + mc) × [k0, k0 + kc) as MR-row groups, k-major, zero rows past M
        const int64_t groups = (mc + MR - 1) / MR;
        apack.resize(size_t(groups * MR * kc));
        if (mc % MR) std::fill(apack.end() - MR * kc, apack.end(), 0.0f);
        for (int64_t i = 0; i < mc; ++i) {
          const float* src = A + (m0 + i) * lda + k0;
          float* dst = apack.data() + (i / MR) * MR * kc + i % MR;
          for (int64_t k = 0; k < kc; ++k) dst[k * MR] = src[k];
        }
        for (int64_t pan = pa; pan < pb; ++pan) {
          SgemmTile t{};
          t.b = B.data.data() + pan * K * nr + k0 * nr;
          t.K = kc;
          t.load_c = k0 > 0;
          t.ldc = ldc;
          t.nv = int(std::min(nr, N - pan * nr));
          t.bias = bias && last ? bias + pan * nr : nullptr;
          for (int64_t i0 = 0; i0 < mc; i0 += MR) {
            t.mr = int(std::min(MR, mc - i0));
            t.a = apack.data() + (i0 / MR) * MR * kc;
            t.c = C + (m0 + i0) * ldc + pan * nr;
            if (wide) sgemm_tile_avx512(t);
            else sgemm_tile_avx2(t);
          }
        }
      }
    }
  });
}

}  // namespace mase::cpu
