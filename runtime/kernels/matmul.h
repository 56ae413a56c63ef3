// runtime/kernels/matmul.h — GEMM: OpenBLAS, oneDNN's matmul for large fp32 ones where it is
// installed (runtime/cpu/onednn_gemm.h), cuBLAS on the GPU.
//
// Row-major, as BLAS's CBLAS interface takes it: C (M×N) = alpha·op(A)·op(B) + beta·C with
// op(X) = X or Xᵀ. A transposed *view* needs no copy: it is the same memory read with the
// transpose flag, so ops pass (trans, ld) instead of materialising a transpose.
//
// The contract of the matmul kernels: both backends' signatures side by side, implemented by
// runtime/cpu/matmul.cpp (mase::cpu, templates over float and double) and cuda/matmul.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>
#include <memory>

#include "runtime/gemm_precision.h"

#include "runtime/kernels/backend.h"

namespace mase::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// A Linear's forward: C (M×N) = A (M×K)·op(B) + bias (N) added to every row. Where oneDNN runs
// the GEMM (the conditions of gemm<float> above), the bias is the primitive's bias argument,
// added to each sum in registers before the store. Elsewhere — and on the portable path — the
// bias is first copied into every row of C and the GEMM adds to it (beta = 1). The second way
// costs a full write of C before the GEMM and a full read of it inside: measured on BERT's
// Linear shapes (M 8192, 2-core Cascade Lake, 2026-11-27) the first is 1.03–1.26× faster on
// oneDNN (bert-tiny's 128 → 512 up-projection 5.1 against 6.4 ms). The two round differently
// (bias first or last), so a model's outputs move by an ulp; both are deterministic.
template <class T>
void gemm_bias(bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
               int64_t ldb, const T* bias, T* C, int64_t ldc);

// BERT's FFN for inference: C = gelu(A·op(B) + bias), GELU applied as the GEMM stores each
// block of C, where a path can — today our AMX-BF16 tiles under --precision bf16 (runtime/cpu/
// bf16_amx.cpp), which otherwise write C and leave GELU a pass of its own over it (the
// (B·T, 4·H) intermediate: 64 MB a layer of bert-small). Returns false, C untouched, where no
// path applies: the caller then runs gemm and bias_gelu_forward (autograd/ops/gelu.cpp).
bool gemm_bias_gelu(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc);

// `batch` GEMMs of the same sizes; matrix i uses A + a_off[i], B + b_off[i], C + c_off[i].
// Offsets (in elements) let batch dims have any strides, including 0 for a shared operand.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, int64_t batch,
                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off);

// Whether gemm<float> hands problems of at least kOnednnMinWork multiply-adds to oneDNN's
// matmul (a build with libdnnl-dev; MASE_SGEMM=openblas starts it off; runtime/cpu/
// onednn_gemm.h says why and what was measured). Switchable for A/B (mase-bench --onednn).
constexpr double kOnednnMinWork = 8.0 * 1024 * 1024;  // M·N·K
// ... and whose N and K are at most this: oneDNN's matmul on plain (not reordered) operands lost
// to OpenBLAS by up to 2.5× when N or K is large — 4096³ at 0.40×, bert-base's 3072-wide
// gradients at 0.49×, most weight gradients (K = B·T = 8192 rows) at 0.50–0.87× — and won
// up to 1.33× on the rest of BERT's shapes (quiet 2-core Cascade Lake, 2026-11-26 evening,
// `mase-bench --suite gemm --onednn on|off`, docs/performance.md).
constexpr int64_t kOnednnMaxNK = 2048;
// ... and, when B is not transposed (the input gradient dY·W of a Linear), whose K is at most
// this: bert-small's FFN-out dx (M 8192, N 512, K 2048) took 84–86 ms on oneDNN against 72–79
// on OpenBLAS (two alternating runs, same session), while x·Wᵀ of the same size (B transposed)
// stays faster on oneDNN (69 against 71–77) (2-core Cascade Lake, 2026-11-27, `mase-bench
// --suite gemm --onednn on|off`).
constexpr int64_t kOnednnMaxKPlainB = 1024;
// Both bounds hold only where OpenBLAS runs AVX-512 kernels. Debian 12's OpenBLAS 0.3.21 knows
// AVX-512 on Intel only (SkylakeX, Cooperlake, SapphireRapids kernels): on AMD Zen 4 and 5 it
// picks its Haswell (AVX2) kernels, half the machine's width, and oneDNN's JIT kernels ran every
// BERT shape 1.6–2.4× faster, the wide and deep ones included (2-core AMD EPYC Zen 5,
// 2026-11-28, `mase-bench --suite gemm --onednn on|off`, docs/performance.md). This is true
// there: oneDNN then takes every problem of at least kOnednnMinWork.
bool openblas_narrower_than_cpu();
bool onednn_enabled();
void set_onednn_enabled(bool on);
// --precision bf16's large GEMMs on oneDNN's bf16 matmul: only on CPUs with AMX-BF16 or
// AVX512-BF16 (elsewhere oneDNN emulates bf16, slower than our rounding + fp32 GEMM), or when
// forced (tests check its numbers on any CPU). runtime/cpu/onednn_gemm.h.
bool onednn_bf16_active();
void set_onednn_bf16_forced(bool on);

// Weights reordered once, for inference on weights that no longer change ("frozen":
// graph::compile's freeze_weights pass, graph/passes/freeze_weights.h). The plain-layout
// matmul above reads W (N, K) as it lies, at every call; oneDNN's kernels want it in blocks
// of their own (for AVX-512, panels of 64 output columns with K innermost in groups), and
// rearranging it once saves that work at every call: most at a small batch, where it is a large
// part of each GEMM (docs/lab4.md, "A promise eager cannot make: freezing the weights").
// In runtime/cpu/onednn_packed.cpp.
// The bias goes in as oneDNN's bias argument (added to the sums before the store). Not
// bitwise eager's: oneDNN's blocked kernel sums K in another order than its plain one.
// Each weight caches a primitive per (M, lda, ldc, bias or not).
// Under --precision bf16 where oneDNN runs bf16 (onednn_bf16_active(): AVX512-BF16 without
// AMX, e.g. AMD Zen 4/5; with AMX, frozen weights go to our tiles instead, bf16.h), W is
// rounded to bf16 once and packed as bf16 (half the bytes), and each call rounds A to bf16 —
// the operands eager bf16 multiplies, summed in fp32 in another order.
struct OnednnWeights;
std::shared_ptr<const OnednnWeights> onednn_f32_pack(const float* W, int64_t ldw, int64_t N,
                                                     int64_t K);  // null: oneDNN can't
std::shared_ptr<const OnednnWeights> onednn_bf16_pack(const float* W, int64_t ldw, int64_t N,
                                                      int64_t K);  // null: no oneDNN bf16 here
// C (M, N) = A (M, K)·Wᵀ (+ bias (N)); A fp32 (rounded to bf16 first when W is bf16)
void onednn_packed_linear(float* C, int64_t ldc, const float* A, int64_t lda, int64_t M,
                          const OnednnWeights& W, const float* bias);
bool onednn_packed_bf16(const OnednnWeights& W);     // packed by onednn_bf16_pack
size_t onednn_packed_bytes(const OnednnWeights& W);  // its copy of W

}  // namespace mase::cpu

// ---- batches of GEMMs: how their operands are laid out ---------------------------------------
namespace mase {

// The offsets of a batch of GEMMs (one array per operand, in elements) often follow a grid:
//   off[i] = first + (i / inner)·outer_stride + (i % inner)·inner_stride
// Attention heads are the usual case: q (B, T, NH, HS) viewed as (B, NH, T, HS) has matrix
// (b, h) at b·T·C + h·HS, so inner = NH, outer stride T·C, inner stride HS. With inner ==
// batch (one level) the batch is a single strided-batched GEMM; with two levels cuBLAS needs
// a pointer per matrix (cuda/matmul.cu builds them on the device); anything else is split into
// runs of evenly strided matrices.
struct BatchGrid {
  int64_t inner = 1;                 // matrices per outer step (== batch: one level)
  int64_t first[3] = {0, 0, 0};      // a, b, c: the offset of matrix 0
  int64_t outer_stride[3] = {0, 0, 0};
  int64_t inner_stride[3] = {0, 0, 0};
};

// True (and *grid filled) when all three offset arrays follow one grid with a common `inner`.
inline bool batch_grid(int64_t batch, const int64_t* a_off, const int64_t* b_off,
                       const int64_t* c_off, BatchGrid* grid) {
  if (batch < 1) return false;
  const int64_t* off[3] = {a_off, b_off, c_off};
  BatchGrid g;
  // inner = the first index at which any operand's step changes (batch when none does)
  g.inner = batch;
  for (int64_t i = 2; i < batch && g.inner == batch; ++i)
    for (int k = 0; k < 3; ++k)
      if (off[k][i] - off[k][i - 1] != off[k][1] - off[k][0]) g.inner = i;
  if (batch % g.inner != 0) return false;
  for (int k = 0; k < 3; ++k) {
    g.first[k] = off[k][0];
    g.inner_stride[k] = g.inner > 1 ? off[k][1] - off[k][0] : 0;
    g.outer_stride[k] = g.inner < batch ? off[k][g.inner] - off[k][0] : 0;
    for (int64_t i = 0; i < batch; ++i)
      if (off[k][i] != g.first[k] + (i / g.inner) * g.outer_stride[k] +
                           (i % g.inner) * g.inner_stride[k])
        return false;
  }
  *grid = g;
  return true;
}

// The length of the run of evenly strided matrices starting at `start` (at least 1): matrices
// start .. start + len - 1 have constant steps in all three offset arrays.
inline int64_t strided_run(int64_t batch, int64_t start, const int64_t* a_off,
                           const int64_t* b_off, const int64_t* c_off) {
  if (start + 2 > batch) return batch - start;
  const int64_t da = a_off[start + 1] - a_off[start], db = b_off[start + 1] - b_off[start],
                dc = c_off[start + 1] - c_off[start];
  int64_t end = start + 2;
  while (end < batch && a_off[end] - a_off[end - 1] == da && b_off[end] - b_off[end - 1] == db &&
         c_off[end] - c_off[end - 1] == dc)
    ++end;
  return end - start;
}

// The arithmetic of GEMMs on the GPU (cuBLAS math mode): GemmPrecision, runtime/gemm_precision.h.

}  // namespace mase

// ---- the CUDA twin: cuda/matmul.cu ----
namespace mase::cuda {

// Applies to every later cuda::gemm / gemm_batched (process-wide; set once at start-up).
MASE_CUDA_FN(void, set_gemm_precision, (GemmPrecision p))
MASE_CUDA_FN(GemmPrecision, gemm_precision, ())

MASE_CUDA_FN(void, gemm, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                          float* C, int64_t ldc))
MASE_CUDA_FN(void, gemm_batched, (bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                  float alpha, const float* A, int64_t lda, const float* B,
                                  int64_t ldb, float beta, float* C, int64_t ldc, int64_t batch,
                                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off))
// gemm_batched issues one cuBLAS call per grid (batch_grid above): strided-batched for one
// level, pointer-array batched for two, runs of strided-batched otherwise. The environment
// variable MASE_GEMM_BATCHED=loop selects the old way — one cublasSgemm per matrix — so one
// run can time both (scripts/gpu/step.sh).

}  // namespace mase::cuda
