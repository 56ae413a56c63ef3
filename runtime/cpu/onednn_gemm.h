// runtime/cpu/onednn_gemm.h — large fp32 GEMMs on oneDNN's matmul, where oneDNN is installed
// (Debian: libdnnl-dev) — the choice issue 21 asked to make by measurement.
//
// Why: measured on a quiet 2-core Xeon (AVX-512, 2026-11-26, docs/performance.md "The CPU's
// own matrix units"), oneDNN's matmul on the weights as they are (no reorder, nothing cached
// per weight) runs BERT's Linear shapes 1.04–2.1× faster than OpenBLAS's sgemm (most on
// bert-tiny's 128-wide ones) and 0.86× at 4096³; PyTorch's CPU path calls it. Whole steps
// gained 1.00–1.10×. (Re-measured that evening, quiet: 0.40× at 4096³, and under 1 on most
// weight gradients and bert-base's 3072-wide products — hence kOnednnMaxNK.) oneDNN's own
// dnnl_sgemm (the BLAS-style entry) was no faster than OpenBLAS: the gain is the matmul
// primitive's JIT kernels, built per shape.
//
// How: a matmul primitive per GEMM signature (sizes, transposes, leading dimensions, alpha,
// beta, bias), created on first use and cached (creating one generates its kernel); the
// operands are bound at each call, so weights updated in place by training are read fresh.
// alpha is an output scale, beta·C a "sum" post-op, the bias the primitive's bias argument.
// Every call runs as blocks of rows (or, for a few rows, of columns) on oneTBB's threads, each
// block a primitive with one OpenMP thread: oneDNN never starts threads of its own, which
// would spin beside ours (onednn_gemm.cpp, "one pool owns the cores").
//
// Who: cpu::gemm<float> (runtime/cpu/matmul.cpp) tries this first for GEMMs of at least
// kOnednnMinWork multiply-adds whose N and K are at most kOnednnMaxNK, K at most
// kOnednnMaxKPlainB when B is not transposed (wider or deeper ones ran up to 2.5× slower than
// OpenBLAS: the evening's re-measurement, runtime/kernels/matmul.h) — or every GEMM of that
// size where OpenBLAS runs narrower kernels than the CPU has (its Haswell kernels on AMD
// Zen 4/5: openblas_narrower_than_cpu, matmul.h).
// Everything else stays on OpenBLAS (f64 GEMMs among them). MASE_SGEMM=
// openblas turns it off (A/B); mase-bench and mase-train print which library runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/kernels/matmul.h"  // kOnednnMinWork, onednn_enabled, set_onednn_enabled

namespace mase::cpu {
// C = alpha·op(A)·op(B) + beta·C, row-major, as BLAS; false when oneDNN did not run it (not
// built, turned off, or it refused the problem): the caller computes it another way.
bool onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// C = A·op(B) + bias (N) in every row, the bias as the primitive's bias argument: added to the
// sums in the kernel's store (cpu::gemm_bias, runtime/kernels/matmul.h, says why).
bool onednn_sgemm_bias(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                       const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc);
// The same with bf16 operands (--precision bf16): A and B rounded to bf16 (to nearest even,
// runtime/kernels/bf16.h; the same bits as every other bf16 path), products and sums in fp32,
// C fp32. oneDNN picks its kernel at run time: AMX-BF16 tiles (Sapphire Rapids) or vdpbf16ps
// (AVX512-BF16) — the CPUs it is used on (onednn_bf16_active()). Elsewhere oneDNN would emulate
// bf16, measured 2× slower than rounding copies into an fp32 GEMM (2-core Cascade Lake,
// 2026-11-26, bert-mini train and eval), so it declines there unless forced (the tests force
// it to check its numbers on any CPU). It covers every transpose, alpha and beta: the
// backward's GEMMs too, which our AVX512-BF16 kernel does not (x·Wᵀ only).
bool onednn_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc);
// C = A·op(B) + bias (N) in every row with bf16 operands, the bias added in the store as
// onednn_sgemm_bias's: one pass over C instead of filling it with the bias and reading it back.
bool onednn_bf16_gemm_bias(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                           const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc);
// (onednn_bf16_active, set_onednn_bf16_forced: runtime/kernels/matmul.h)

// int8 × int8 with int32 sums, scaled after the sum: C[i][j] = float(Σ_k A[i][k]·B[j][k])·
// (a_scale·b_scale[j]) (+ bias[j]) — the integer Linear when its activations have one scale per
// tensor (runtime/kernels/int8_gemm.h, Int8Isa::onednn), the same two roundings as
// int8_gemm_scaled_reference. B (N, K) int8 codes with one scale per row, reordered once into
// the layout oneDNN's kernel wants (null when oneDNN cannot: not built, off, or it refuses).
// The scales are constants of the primitive (oneDNN's brgemm kernels need that: runtime
// scales fall back to a slower gemm), so each weight caches a primitive per (M, a_scale).
struct OnednnInt8Weights;
constexpr int64_t kOnednnMinNK = 64;  // smaller N or K stay on our kernels (int8_gemm.cpp)
// Without AMX (VNNI only), our VNNI kernel is the faster one up to this K; from it on oneDNN's
// K-blocked brgemm wins (our tile streams all of K's B panel from L2). Measured on BERT's
// shapes, docs/performance.md "int8": ours 1.1-1.4x oneDNN at K ≤ 1024, 0.88-0.89x at 2048-3072.
constexpr int64_t kOnednnVnniMinK = 1536;
bool onednn_int8_available();  // built, on, and the CPU has AVX512-VNNI or AMX-INT8
std::shared_ptr<const OnednnInt8Weights> onednn_int8_pack(const int8_t* B, int64_t ldb,
                                                          const float* b_scale, int64_t N,
                                                          int64_t K);
void onednn_int8_gemm(float* C, int64_t ldc, const int8_t* A, int64_t lda, int64_t M,
                      const OnednnInt8Weights& W, float a_scale, const float* bias);
size_t onednn_int8_bytes(const OnednnInt8Weights& W);  // its copy of B and its scales
// fp32 or bf16 weights packed once (onednn_f32_pack, onednn_bf16_pack, onednn_packed_linear):
// runtime/kernels/matmul.h. The int8 and packed entries live in runtime/cpu/onednn_packed.cpp.
// Threads: every call above runs in blocks of rows on oneTBB's threads (mase::set_num_threads),
// each block a primitive with one OpenMP thread, so that libgomp never starts a team of its own
// (onednn_gemm.cpp, "one pool owns the cores", says why).
std::string onednn_version();  // "oneDNN 2.6.3" in a build with it, else ""

}  // namespace mase::cpu
