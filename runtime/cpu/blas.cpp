// runtime/cpu/blas.cpp — load OpenBLAS with OPENBLAS_CORETYPE set from CPUID and a short
// thread timeout (see blas.h).
#include "runtime/cpu/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

namespace mase::blas {
namespace {

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using CorenameFn = char* (*)();

struct Api {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SetThreadsFn set_num_threads = nullptr;
  GetThreadsFn get_num_threads = nullptr;
  CorenameFn corename = nullptr;
};

// Which OpenBLAS core type this CPU can run (runtime/cpu_features.h).
const char* best_coretype() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512()) return "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  return nullptr;
}

const Api& api() {
  static Api api;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("OPENBLAS_CORETYPE"))
      if (const char* core = best_coretype()) setenv("OPENBLAS_CORETYPE", core, 0);
    setenv("OPENBLAS_THREAD_TIMEOUT", "16", 0);  // workers sleep after ~30 µs idle (blas.h)
    void* lib = dlopen(MASE_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    api.sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
    api.dgemm = reinterpret_cast<DgemmFn>(dlsym(lib, "cblas_dgemm"));
    api.set_num_threads = reinterpret_cast<SetThreadsFn>(dlsym(lib, "openblas_set_num_threads"));
    api.corename = reinterpret_cast<CorenameFn>(dlsym(lib, "openblas_get_corename"));
    api.get_num_threads = reinterpret_cast<GetThreadsFn>(dlsym(lib, "openblas_get_num_threads"));
  });
  if (!api.sgemm || !api.dgemm || !api.set_num_threads)
    throw Error(cat("[blas] could not load OpenBLAS from ", MASE_OPENBLAS_LIBRARY,
                    " (install libopenblas-dev: scripts/setup.sh)"));
  return api;
}

}  // namespace

void sgemm(Trans ta, Trans tb, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  api().sgemm(RowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void dgemm(Trans ta, Trans tb, int M, int N, int K, double alpha, const double* A, int lda,
           const double* B, int ldb, double beta, double* C, int ldc) {
  api().dgemm(RowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void set_num_threads(int n) { api().set_num_threads(n); }

int num_threads() {
  const Api& a = api();
  return a.get_num_threads ? a.get_num_threads() : 0;
}

std::string corename() {
  const Api& a = api();
  return a.corename ? a.corename() : "unknown";
}

}  // namespace mase::blas
