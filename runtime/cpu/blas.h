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
#pragma once
#include <string>

namespace mase::blas {

enum Layout { RowMajor = 101 };
enum Trans { NoTrans = 111, DoTrans = 112 };

void sgemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc);  // row-major
void dgemm(Trans ta, Trans tb, int M, int N, int K, double alpha, const double* A, int lda,
           const double* B, int ldb, double beta, double* C, int ldc);  // row-major
void set_num_threads(int n);
std::string corename();  // the kernel family in use, e.g. "SkylakeX"

}  // namespace mase::blas
