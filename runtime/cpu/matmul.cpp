// runtime/cpu/matmul.cpp — sgemm/dgemm calls (see matmul.h).
//
// GEMMs are called from the main thread only, never from inside a TBB task: OpenBLAS runs
// its own threads (as many as mase::num_threads()), and nesting the two pools would
// oversubscribe the cores. A batch is a plain loop of GEMMs, each one using every thread.
#include "runtime/kernels/matmul.h"

#include <cstdint>

#include "runtime/cpu/blas.h"
#include "runtime/error.h"

namespace mase::cpu {

namespace {
blas::Trans flag(bool t) { return t ? blas::DoTrans : blas::NoTrans; }
int as_int(int64_t v) {  // BLAS takes 32-bit sizes
  if (v > INT32_MAX) throw Error(cat("[gemm] size ", v, " exceeds the 32-bit BLAS interface"));
  return static_cast<int>(v);
}
}

template <>
void gemm<float>(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
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
