// runtime/cpu/matmul.cpp — sgemm/dgemm calls: oneDNN for the large fp32 ones where installed,
// OpenBLAS for the rest, the bf16 paths (see matmul.h).
//
// OpenBLAS runs its own threads (as many as mase::num_threads()). Called from inside a TBB
// task (runtime/cpu/sdpa.cpp's f64 tile products) a GEMM runs with OpenBLAS set to one thread
// (SerialBlas, runtime/parallel.h): nesting the two pools would oversubscribe the cores. A
// batch is a plain loop of GEMMs, each one using every thread.
#include "runtime/kernels/matmul.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/cpu/blas.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

namespace mase::cpu {

namespace {
blas::Trans flag(bool t) { return t ? blas::DoTrans : blas::NoTrans; }
int as_int(int64_t v) {  // BLAS takes 32-bit sizes
  if (v > INT32_MAX) throw Error(cat("[gemm] size ", v, " exceeds the 32-bit BLAS interface"));
  return static_cast<int>(v);
}

// rows × cols of X (row stride ld) rounded to bf16 values into buf (row stride cols). Serial:
// GEMMs are also called from inside TBB tasks (runtime/cpu/sdpa.cpp's tile products).
const float* rounded(std::vector<float>& buf, const float* X, int64_t rows, int64_t cols, int64_t ld) {
  buf.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) buf[size_t(r * cols + c)] = bf16_round(X[r * ld + c]);
  return buf.data();
}
}  // namespace

bool openblas_narrower_than_cpu() {
  static const bool narrower = [] {
    if (!cpu_features().avx512()) return false;
    const std::string core = blas::corename();
    return core != "SkylakeX" && core != "Cooperlake" && core != "SapphireRapids";
  }();
  return narrower;
}

namespace {
// Does gemm<float> hand this fp32 problem to oneDNN (when oneDNN is on)? The bounds on N and K
// keep the problems OpenBLAS's native AVX-512 kernels win on OpenBLAS; where OpenBLAS runs
// narrower kernels than the CPU has, oneDNN takes every large problem (matmul.h says why).
bool onednn_shape(bool tb, int64_t M, int64_t N, int64_t K) {
  if (double(M) * double(N) * double(K) < kOnednnMinWork) return false;
  if (openblas_narrower_than_cpu()) return true;
  return N <= kOnednnMaxNK && K <= (tb ? kOnednnMaxNK : kOnednnMaxKPlainB);
}

// Does this bf16 problem run on our AMX-BF16 tiles (where the CPU has them and --amx is on)?
bool on_amx(int64_t M, int64_t N, int64_t K) {
  return cpu_gemm_precision() == GemmPrecision::bf16 && K > 0 &&
         double(M) * double(N) * double(K) >= kAmxMinWork && amx_bf16_active();
}

// C = bias in every row, for the GEMM to add to (beta = 1)
template <class T>
void fill_rows(T* C, int64_t ldc, const T* bias, int64_t M, int64_t N) {
  parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::copy(bias, bias + N, C + r * ldc);
  });
}
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (cpu_gemm_precision() == GemmPrecision::bf16 && K > 0) {
    // on our AMX-BF16 tiles where the CPU has them (bf16_amx.cpp: every transpose form; ×1.2–2.7
    // oneDNN 2.6's AMX matmul on BERT's shapes, docs/performance.md "AMX"); elsewhere the large
    // ones on oneDNN's bf16 matmul where the CPU has AVX512-BF16 (onednn_gemm.h)
    if (on_amx(M, N, K)) {
      amx_bf16_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    if (double(M) * double(N) * double(K) >= kOnednnMinWork &&
        onednn_bf16_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
      return;
    thread_local std::vector<float> ra, rb;
    if (!ta && tb && alpha == 1.0f && beta == 0.0f && bf16_isa_best() == Bf16Isa::avx512_bf16) {
      thread_local std::vector<uint16_t> a16, b16;  // y = x·Wᵀ on the bf16 dot-product unit
      a16.resize(size_t(M * K));
      b16.resize(size_t(N * K));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) a16[size_t(i * K + k)] = bf16_from_f32(A[i * lda + k]);
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) b16[size_t(j * K + k)] = bf16_from_f32(B[j * ldb + k]);
      bf16_gemm(C, ldc, a16.data(), K, b16.data(), K, M, N, K, nullptr, Bf16Isa::avx512_bf16);
      return;
    }
    // op(A) is M × K: stored K × M when transposed; op(B) is K × N: stored N × K when transposed
    const float* a = ta ? rounded(ra, A, K, M, lda) : rounded(ra, A, M, K, lda);
    const float* b = tb ? rounded(rb, B, N, K, ldb) : rounded(rb, B, K, N, ldb);
    blas::sgemm(flag(ta), flag(tb), as_int(M), as_int(N), as_int(K), alpha, a, ta ? as_int(M) : as_int(K),
                b, tb ? as_int(K) : as_int(N), beta, C, as_int(ldc));
    return;
  }
  // large problems that are not too wide or too deep on oneDNN's matmul where it is installed
  // (runtime/cpu/onednn_gemm.h, kOnednnMaxNK says why); the size bound would also keep small
  // products called inside TBB tasks on OpenBLAS (sdpa's f32 tiles are its own: attn_tile.h)
  if (onednn_shape(tb, M, N, K) && onednn_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
  blas::sgemm(flag(ta), flag(tb), as_int(M), as_int(N), as_int(K), alpha, A, as_int(lda), B, as_int(ldb),
              beta, C, as_int(ldc));
}

template <>
void gemm<double>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                  int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  blas::dgemm(flag(ta), flag(tb), as_int(M), as_int(N), as_int(K), alpha, A, as_int(lda), B, as_int(ldb),
              beta, C, as_int(ldc));
}

template <class T>
void gemm_bias(bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
               int64_t ldb, const T* bias, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_gemm_precision() == GemmPrecision::fp32 && onednn_shape(tb, M, N, K) &&
        onednn_sgemm_bias(tb, M, N, K, A, lda, B, ldb, bias, C, ldc))
      return;
    // bf16 on AMX: the bias added as the tiles are stored, instead of filled into C first and
    // read back by the GEMM (two passes over C: 32 MB a Q, K or V of bert-small's step)
    if (on_amx(M, N, K)) {
      amx_bf16_gemm(false, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, bias);
      return;
    }
    // ... and on oneDNN's bf16 matmul (AVX512-BF16 without AMX), its bias argument
    if (cpu_gemm_precision() == GemmPrecision::bf16 && K > 0 &&
        double(M) * double(N) * double(K) >= kOnednnMinWork &&
        onednn_bf16_gemm_bias(tb, M, N, K, A, lda, B, ldb, bias, C, ldc))
      return;
  }
  fill_rows(C, ldc, bias, M, N);
  if (K > 0) gemm<T>(false, tb, M, N, K, T(1), A, lda, B, ldb, T(1), C, ldc);
}
template void gemm_bias<float>(bool, int64_t, int64_t, int64_t, const float*, int64_t,
                               const float*, int64_t, const float*, float*, int64_t);
template void gemm_bias<double>(bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                const double*, int64_t, const double*, double*, int64_t);

bool gemm_bias_gelu(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc) {
  if (!on_amx(M, N, K)) return false;
  amx_bf16_gemm(false, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, bias, /*gelu=*/true);
  return true;
}

template <class T>
void gemm_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, int64_t batch,
                  const int64_t* a_off, const int64_t* b_off, const int64_t* c_off) {
  for (int64_t i = 0; i < batch; ++i)
    gemm<T>(ta, tb, M, N, K, alpha, A + a_off[i], lda, B + b_off[i], ldb, beta, C + c_off[i], ldc);
}

template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, const float*, int64_t, float, float*, int64_t, int64_t,
                                  const int64_t*, const int64_t*, const int64_t*);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, const double*, int64_t, double, double*, int64_t,
                                   int64_t, const int64_t*, const int64_t*, const int64_t*);

}  // namespace mase::cpu
