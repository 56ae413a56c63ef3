// runtime/cpu/blas.h — OpenBLAS, loaded at first use with the right kernels for this CPU.
//
// Why not just link it: OpenBLAS picks its GEMM kernels when the library is *loaded*, from the
// CPU model that CPUID reports. On virtual machines that model is often a generic "Intel Xeon
// Processor" that OpenBLAS does not recognise, and it falls back to its SSE3 "Prescott"
// kernels — about 4× slower than the AVX2/AVX-512 ones the CPU actually supports (measured on
// our 2-core VM: bert-small training 130 → 515 tokens/s). The library reads the environment
// variable OPENBLAS_CORETYPE at load time, so we load it ourselves (dlopen) after setting that
// variable from the CPU's feature flags — unless the user set it already.
//
//   AVX-512 F/BW/DQ/VL → "SkylakeX"      AVX2 + FMA → "Haswell"      otherwise: OpenBLAS decides
//
// The same goes for OPENBLAS_THREAD_TIMEOUT. After a GEMM, OpenBLAS's worker threads spin
// (calling sched_yield) for 2^28 cycles — about 0.1 s — before they sleep, in case another
// GEMM follows. In a training step a GEMM is followed by an elementwise kernel on oneTBB's
// threads, not by a GEMM, so the spinning worker takes a core from the TBB worker: measured,
// 36 ms of CPU burnt in a 100 ms pause after one sgemm, and sched_yield was 17% of the CPU
// samples of a bert-small training step. We set 2^16 cycles (~30 µs): back-to-back GEMMs (a
// batch of attention heads) still find the workers awake, a kernel in between does not
// compete with them. (OpenBLAS clamps the exponent to [4, 30]; a user's setting wins.)
#pragma once
#include <string>

namespace mase::blas {

enum Layout { RowMajor = 101 };
enum Trans { NoTrans = 111, DoTrans = 112 };

void sgemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);  // row-major
void dgemm(Trans ta, Trans tb, int M, int N, int K, double alpha, const double* A, int lda,
           const double* B, int ldb, double beta, double* C, int ldc);  // row-major
void set_num_threads(int n);  // process-wide: every thread's GEMMs (parallel.h's SerialBlas)
int num_threads();            // openblas_get_num_threads(); 0 if this OpenBLAS lacks it
std::string corename();  // the kernel family in use, e.g. "SkylakeX"

}  // namespace mase::blas
