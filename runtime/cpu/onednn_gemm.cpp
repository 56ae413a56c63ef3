// runtime/cpu/onednn_gemm.cpp — fp32 GEMMs through oneDNN's matmul primitive (see
// onednn_gemm.h). Compiled with MASE_HAS_DNNL when CMake found libdnnl; otherwise every entry
// says "not here" and OpenBLAS runs everything.
#include "runtime/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#ifdef MASE_HAS_DNNL
#include <dlfcn.h>

#include <atomic>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#endif

namespace mase::cpu {

#ifdef MASE_HAS_DNNL
namespace {

bool turned_off() {
  const char* v = std::getenv("MASE_SGEMM");
  return v && std::strcmp(v, "openblas") == 0;
}

// Everything that shapes the primitive: sizes, transposes, leading dimensions, alpha, beta.
using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, float, float>;

struct Cache {
  std::mutex mu;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<Key, dnnl::matmul> prims;
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: GEMMs may run during static destruction
  return *c;
}

using dt = dnnl::memory::data_type;
// A rows × cols matrix stored row-major with leading dimension ld, or transposed (stored
// cols × rows): the strides say which, so no copy is ever made.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool trans, int64_t ld) {
  return dnnl::memory::desc({rows, cols}, dt::f32,
                            trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{!turned_off()};
  return on;
}

}  // namespace

bool onednn_enabled() { return enabled_flag().load(std::memory_order_relaxed); }
void set_onednn_enabled(bool on) { enabled_flag() = on; }

bool onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!onednn_enabled() || K == 0) return false;
  Cache& c = cache();
  const dnnl::memory::desc ad = matrix(M, K, ta, lda), bd = matrix(K, N, tb, ldb),
                           cd = matrix(M, N, false, ldc);
  dnnl::matmul prim;
  try {
    const Key key{M, N, K, ta, tb, lda, ldb, ldc, alpha, beta};
    std::lock_guard lock(c.mu);
    auto it = c.prims.find(key);
    if (it == c.prims.end()) {
      if (c.prims.size() > 512) c.prims.clear();  // many shapes (dynamic padding): start over
      dnnl::primitive_attr attr;
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr, c.engine);
      it = c.prims.emplace(key, dnnl::matmul(pd)).first;
    }
    prim = it->second;
  } catch (const dnnl::error&) {
    return false;  // a problem oneDNN refuses: OpenBLAS computes it
  }
  thread_local dnnl::stream stream(c.engine);
  dnnl::memory a(ad, c.engine, const_cast<float*>(A)), b(bd, c.engine, const_cast<float*>(B)),
      out(cd, c.engine, C);
  prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, out}});
  stream.wait();
  return true;
}

void onednn_set_num_threads(int n) {
  // libgomp came in with libdnnl; found by name so that nothing here links OpenMP itself
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set) set(n);
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

#else  // no oneDNN in this build

bool onednn_enabled() { return false; }
void set_onednn_enabled(bool) {}
bool onednn_sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                  const float*, int64_t, float, float*, int64_t) {
  return false;
}
void onednn_set_num_threads(int) {}
std::string onednn_version() { return ""; }

#endif

}  // namespace mase::cpu
