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
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/kernels/bf16.h"
#endif

namespace mase::cpu {

#ifdef MASE_HAS_DNNL
namespace {

bool turned_off() {
  const char* v = std::getenv("MASE_SGEMM");
  return v && std::strcmp(v, "openblas") == 0;
}

// Everything that shapes the primitive: sizes, transposes, leading dimensions, alpha, beta,
// and whether the operands are bf16.
using Key =
    std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, float, float, bool>;

struct Cache {
  std::mutex mu;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<Key, dnnl::matmul> prims;
  std::string bf16_impl;  // what oneDNN chose for the last bf16 primitive made
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: GEMMs may run during static destruction
  return *c;
}

using dt = dnnl::memory::data_type;
// A rows × cols matrix stored row-major with leading dimension ld, or transposed (stored
// cols × rows): the strides say which, so no copy is ever made.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool trans, int64_t ld, dt type = dt::f32) {
  return dnnl::memory::desc({rows, cols}, type,
                            trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

// The cached primitive for this problem, made on first use (nullopt: oneDNN refuses it).
std::optional<dnnl::matmul> primitive(const Key& key, const dnnl::memory::desc& ad,
                                      const dnnl::memory::desc& bd, const dnnl::memory::desc& cd,
                                      float alpha, float beta, bool bf16) {
  Cache& c = cache();
  try {
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
      if (bf16) c.bf16_impl = pd.impl_info_str();
      it = c.prims.emplace(key, dnnl::matmul(pd)).first;
    }
    return it->second;
  } catch (const dnnl::error&) {
    return std::nullopt;  // a problem oneDNN refuses: the caller computes it another way
  }
}

void run(const dnnl::matmul& prim, const dnnl::memory::desc& ad, const void* A,
         const dnnl::memory::desc& bd, const void* B, const dnnl::memory::desc& cd, float* C) {
  Cache& c = cache();
  thread_local dnnl::stream stream(c.engine);
  dnnl::memory a(ad, c.engine, const_cast<void*>(A)), b(bd, c.engine, const_cast<void*>(B)),
      out(cd, c.engine, C);
  prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, out}});
  stream.wait();
}

// rows × cols stored with leading dimension ld, rounded to bf16 into buf (leading dimension cols)
const uint16_t* to_bf16(std::vector<uint16_t>& buf, const float* X, int64_t rows, int64_t cols,
                        int64_t ld) {
  buf.resize(size_t(rows * cols));
  if (ld == cols) {
    bf16_from_f32(buf.data(), X, rows * cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) bf16_from_f32(buf.data() + r * cols, X + r * ld, cols);
  }
  return buf.data();
}

std::atomic<bool> g_bf16_forced{false};

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
  const dnnl::memory::desc ad = matrix(M, K, ta, lda), bd = matrix(K, N, tb, ldb),
                           cd = matrix(M, N, false, ldc);
  const auto prim = primitive({M, N, K, ta, tb, lda, ldb, ldc, alpha, beta, false}, ad, bd, cd,
                              alpha, beta, false);
  if (!prim) return false;  // OpenBLAS computes it
  run(*prim, ad, A, bd, B, cd, C);
  return true;
}

bool onednn_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc) {
  if (!onednn_bf16_active() || K == 0) return false;
  // op(A) is M × K, stored K × M when transposed; op(B) is K × N, stored N × K when transposed.
  // The rounded copies are dense: their leading dimension is their stored row length.
  const int64_t la = ta ? M : K, lb = tb ? K : N;
  const dnnl::memory::desc ad = matrix(M, K, ta, la, dt::bf16), bd = matrix(K, N, tb, lb, dt::bf16),
                           cd = matrix(M, N, false, ldc);
  const auto prim = primitive({M, N, K, ta, tb, la, lb, ldc, alpha, beta, true}, ad, bd, cd,
                              alpha, beta, true);
  if (!prim) return false;
  thread_local std::vector<uint16_t> a16, b16;
  const uint16_t* a = ta ? to_bf16(a16, A, K, M, lda) : to_bf16(a16, A, M, K, lda);
  const uint16_t* b = tb ? to_bf16(b16, B, N, K, ldb) : to_bf16(b16, B, K, N, ldb);
  run(*prim, ad, a, bd, b, cd, C);
  return true;
}

bool onednn_bf16_active() {
  const CpuFeatures& f = cpu_features();
  return onednn_enabled() && (g_bf16_forced || f.amx_bf16 || (f.avx512() && f.avx512_bf16));
}
void set_onednn_bf16_forced(bool on) { g_bf16_forced = on; }

std::string onednn_bf16_impl() {
  std::lock_guard lock(cache().mu);
  return cache().bf16_impl;
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
bool onednn_bf16_gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                      const float*, int64_t, float, float*, int64_t) {
  return false;
}
std::string onednn_bf16_impl() { return ""; }
bool onednn_bf16_active() { return false; }
void set_onednn_bf16_forced(bool) {}
void onednn_set_num_threads(int) {}
std::string onednn_version() { return ""; }

#endif

}  // namespace mase::cpu
