// runtime/cpu/onednn_gemm.cpp — GEMMs through oneDNN's matmul primitive (see onednn_gemm.h) on
// operands as they lie: fp32, and bf16 operands on CPUs with bf16 units; and what every oneDNN
// call shares (onednn_detail.h). Weights reordered once are in onednn_packed.cpp. Compiled
// with MASE_HAS_DNNL when CMake found libdnnl; otherwise every entry says "not here" and our
// own kernels and OpenBLAS run everything.
#include "runtime/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#ifdef MASE_HAS_DNNL
#include <dlfcn.h>

#include <atomic>
#include <optional>
#include <string>
#include <tuple>

#include "runtime/cpu/onednn_detail.h"
#include "runtime/cpu_features.h"
#include "runtime/kernels/bf16.h"
#endif

namespace mase::cpu {

#ifdef MASE_HAS_DNNL
using namespace onednn_detail;
namespace {

bool turned_off() {
  const char* v = std::getenv("MASE_SGEMM");
  return v && std::strcmp(v, "openblas") == 0;
}

// Everything that shapes the primitive: sizes, transposes, leading dimensions, alpha, beta,
// whether the operands are bf16, and whether a bias is added in the store.
using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, float,
                       float, bool, bool>;

struct Cache {
  std::mutex mu;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<Key, dnnl::matmul> prims;
};
Cache& cache() {
  static Cache* c = [] {
    // MASE_MAX_CPU_ISA (runtime/cpu_features.h): oneDNN must pick no kernel above the capped
    // level either; the cap only works before oneDNN's first primitive, which is here
    const std::string& capped = cpu_features().capped;
    try {
      if (capped == "avx2") dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      if (capped == "avx512") dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_vnni);
    } catch (const dnnl::error&) {  // too late (oneDNN was used already): leave it
    }
    return new Cache();  // never destroyed: GEMMs may run during static destruction
  }();
  return *c;
}
}  // namespace

// ---- one pool owns the cores ----
// Two thread pools on the same cores fight: oneTBB's (every kernel of ours) and OpenMP's
// (oneDNN, built on libgomp in Debian). After each parallel region libgomp's workers spin,
// 300,000 turns by default, waiting for the next one — while the next op is usually ours, on
// TBB threads that now share the cores with a spinning thread. On 2 cores that cost 4–9% of
// whole BERT steps (2-core Cascade Lake, 2026-11-27: OMP_WAIT_POLICY=passive against the
// default, mase-bench --suite e2e, docs/performance.md "Two thread pools"). libgomp reads that
// variable before main, so the fix is structural: oneDNN never starts a thread. Each call is
// cut into blocks of rows, one per TBB thread, and each block is a primitive made and run with
// one OpenMP thread (the thread's own ICV: libgomp keeps one per thread). A row's sums run
// along K inside one block; oneDNN may block K differently for another number of rows, so
// another thread count can move the last bits (as with OpenBLAS), the same count never does.
namespace onednn_detail {
const dnnl::engine& engine() { return cache().engine; }

void one_omp_thread() {
  // libgomp came in with libdnnl; found by name so that nothing here links OpenMP itself
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set) set(1);
}

int64_t block_rows(int64_t M) {
  const int64_t n = std::clamp<int64_t>(M / kMinBlockRows, 1, num_threads());
  const int64_t step = std::max<int64_t>((M + n - 1) / n, 1);
  return (step + 7) / 8 * 8;  // whole cache lines of C where ldc allows
}

// A primitive's scratch memory (its packed copies of operand panels) belongs by default to the
// primitive, so two blocks running one primitive at once would share it. Each thread brings
// its own instead (scratchpad mode "user", thread_scratchpad below).
dnnl::primitive_attr own_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {
dnnl::memory thread_scratchpad(const dnnl::primitive& prim, const dnnl::engine& engine) {
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(prim.get_primitive_desc(),
                                                              dnnl_query_scratchpad_md, 0);
  const dnnl::memory::desc d = md ? dnnl::memory::desc(*md) : dnnl::memory::desc();
  thread_local std::vector<char> bytes;
  const size_t need = d.get_size() + 64;
  if (bytes.size() < need) bytes.resize(need);
  auto p = reinterpret_cast<uintptr_t>(bytes.data());
  return dnnl::memory(d, engine, reinterpret_cast<void*>((p + 63) / 64 * 64));
}

// A rows × cols matrix stored row-major with leading dimension ld, or transposed (stored
// cols × rows): the strides say which, so no copy is ever made.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool trans, int64_t ld, dt type = dt::f32) {
  return dnnl::memory::desc({rows, cols}, type,
                            trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

// The cached primitive for this problem, made on first use (nullopt: oneDNN refuses it).
std::optional<dnnl::matmul> primitive(const Key& key, const dnnl::memory::desc& ad,
                                      const dnnl::memory::desc& bd, const dnnl::memory::desc& cd,
                                      float alpha, float beta,
                                      const dnnl::memory::desc& biasd = dnnl::memory::desc()) {
  Cache& c = cache();
  one_omp_thread();  // the primitive is planned for the threads it will run with
  try {
    std::lock_guard lock(c.mu);
    auto it = c.prims.find(key);
    if (it == c.prims.end()) {
      if (c.prims.size() > 512) c.prims.clear();  // many shapes (dynamic padding): start over
      dnnl::primitive_attr attr = own_scratchpad();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, biasd, cd), attr, c.engine);
      it = c.prims.emplace(key, dnnl::matmul(pd)).first;
    }
    return it->second;
  } catch (const dnnl::error&) {
    return std::nullopt;  // a problem oneDNN refuses: the caller computes it another way
  }
}

// The blocks of N columns, for a matrix with too few rows: whole 64-column panels each.
int64_t block_cols(int64_t N) {
  const int64_t n = std::clamp<int64_t>(N / kMinBlockCols, 1, num_threads());
  return ((N + n - 1) / n + kMinBlockCols - 1) / kMinBlockCols * kMinBlockCols;
}
}  // namespace

void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  Cache& c = cache();
  thread_local dnnl::stream stream(c.engine);
  args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(prim, c.engine));
  prim.execute(stream, args);
  stream.wait();
}

dnnl::memory row_vector(const float* v, int64_t N) {
  return dnnl::memory({{1, N}, dt::f32, dnnl::memory::dims{N, 1}}, cache().engine,
                      const_cast<float*>(v));
}

void run_packed(const dnnl::matmul& prim, dt a_type, const void* A, int64_t lda, int64_t m,
                int64_t K, const dnnl::memory& w, float* C, int64_t ldc, int64_t N, int vec_arg,
                const float* vec) {
  const dnnl::engine& e = cache().engine;
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory({{m, K}, a_type, dnnl::memory::dims{lda, 1}}, e, const_cast<void*>(A))},
      {DNNL_ARG_WEIGHTS, w},
      {DNNL_ARG_DST, dnnl::memory({{m, N}, dt::f32, dnnl::memory::dims{ldc, 1}}, e, C)}};
  if (vec) args.emplace(vec_arg, row_vector(vec, N));
  execute(prim, std::move(args));
}
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

dnnl::memory reordered(const dnnl::memory::desc& plain, const void* data,
                       const dnnl::memory::desc& layout) {
  Cache& c = cache();
  dnnl::memory dst(layout, c.engine), src(plain, c.engine, const_cast<void*>(data));
  dnnl::stream stream(c.engine);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  return dst;
}

}  // namespace onednn_detail

namespace {
void run(const dnnl::matmul& prim, const dnnl::memory::desc& ad, const void* A,
         const dnnl::memory::desc& bd, const void* B, const dnnl::memory::desc& cd, float* C,
         const float* bias = nullptr) {
  const dnnl::engine& e = cache().engine;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(ad, e, const_cast<void*>(A))},
                                             {DNNL_ARG_WEIGHTS, dnnl::memory(bd, e, const_cast<void*>(B))},
                                             {DNNL_ARG_DST, dnnl::memory(cd, e, C)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, row_vector(bias, cd.dims()[1]));
  execute(prim, std::move(args));
}

std::atomic<bool> g_bf16_forced{false};

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{!turned_off()};
  return on;
}

}  // namespace

bool onednn_enabled() { return enabled_flag().load(std::memory_order_relaxed); }
void set_onednn_enabled(bool on) { enabled_flag() = on; }

namespace {
// C = alpha·op(A)·op(B) (+ bias in every row) (+ beta·C), elements of A and B of `type`, in
// blocks run by for_blocks: blocks of rows (block r0 reads A from row r0 — column r0 when A is
// stored transposed — and writes C from row r0), or, when there are too few rows to give each
// thread kMinBlockRows, blocks of columns (B, C and the bias from column c0): a batch of one
// short sequence (16 rows) would otherwise run on one core. false: oneDNN refused the problem.
bool blocked_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                    int64_t lda, const void* B, int64_t ldb, float beta, float* C, int64_t ldc,
                    const float* bias, dt type) {
  const bool by_cols = M < 2 * kMinBlockRows && N >= 2 * kMinBlockCols && num_threads() > 1;
  const int64_t extent = by_cols ? N : M, step = by_cols ? block_cols(N) : block_rows(M);
  const int64_t tail = last_block(extent, step);
  // a block of `e` rows (or columns): its sizes
  auto dims = [&](int64_t e) { return std::pair{by_cols ? M : e, by_cols ? e : N}; };
  auto make = [&](int64_t e) {
    const auto [m, n] = dims(e);
    return primitive({m, n, K, ta, tb, lda, ldb, ldc, alpha, beta, type == dt::bf16, bias != nullptr},
                     matrix(m, K, ta, lda, type), matrix(K, n, tb, ldb, type),
                     matrix(m, n, false, ldc), alpha, beta,
                     bias ? matrix(1, n, false, n) : dnnl::memory::desc());
  };
  const auto full = make(std::min(step, extent)), last = make(tail);  // before any block runs
  if (!full || !last) return false;
  const size_t esize = type == dt::bf16 ? 2 : 4;
  for_blocks(extent, step, [&](int64_t e0, int64_t e) {
    const auto [m, n] = dims(e);
    const int64_t a_off = by_cols ? 0 : (ta ? e0 : e0 * lda), b_off = by_cols ? (tb ? e0 * ldb : e0) : 0;
    run(e == tail ? *last : *full, matrix(m, K, ta, lda, type),
        static_cast<const char*>(A) + size_t(a_off) * esize, matrix(K, n, tb, ldb, type),
        static_cast<const char*>(B) + size_t(b_off) * esize, matrix(m, n, false, ldc),
        C + (by_cols ? e0 : e0 * ldc), bias ? bias + (by_cols ? e0 : 0) : nullptr);
  });
  return true;
}
}  // namespace

bool onednn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!onednn_enabled() || K == 0 || M == 0 || N == 0) return false;  // OpenBLAS computes it
  return blocked_matmul(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr, dt::f32);
}

bool onednn_sgemm_bias(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                       const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc) {
  if (!onednn_enabled() || K == 0 || M == 0 || N == 0) return false;
  return blocked_matmul(false, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, bias, dt::f32);
}

namespace {
// Both bf16 entries: A and B rounded into dense copies, then oneDNN's bf16 matmul (+ bias).
bool bf16_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                 const float* bias) {
  if (!onednn_bf16_active() || K == 0 || M == 0 || N == 0) return false;
  // op(A) is M × K, stored K × M when transposed; op(B) is K × N, stored N × K when transposed.
  // The rounded copies are dense: their leading dimension is their stored row length.
  thread_local std::vector<uint16_t> a16, b16;
  const uint16_t* a = ta ? to_bf16(a16, A, K, M, lda) : to_bf16(a16, A, M, K, lda);
  const uint16_t* b = tb ? to_bf16(b16, B, N, K, ldb) : to_bf16(b16, B, K, N, ldb);
  return blocked_matmul(ta, tb, M, N, K, alpha, a, ta ? M : K, b, tb ? K : N, beta, C, ldc,
                        bias, dt::bf16);
}
}  // namespace

bool onednn_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc) {
  return bf16_matmul(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

bool onednn_bf16_gemm_bias(bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                           const float* B, int64_t ldb, const float* bias, float* C, int64_t ldc) {
  return bf16_matmul(false, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, bias);
}

bool onednn_bf16_active() {
  const CpuFeatures& f = cpu_features();
  return onednn_enabled() && (g_bf16_forced || f.amx_bf16 || (f.avx512() && f.avx512_bf16));
}
void set_onednn_bf16_forced(bool on) { g_bf16_forced = on; }

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
bool onednn_sgemm_bias(bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                       int64_t, const float*, float*, int64_t) {
  return false;
}
bool onednn_bf16_gemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                      const float*, int64_t, float, float*, int64_t) {
  return false;
}
bool onednn_bf16_gemm_bias(bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                           int64_t, const float*, float*, int64_t) {
  return false;
}
bool onednn_bf16_active() { return false; }
void set_onednn_bf16_forced(bool) {}
std::string onednn_version() { return ""; }

#endif

}  // namespace mase::cpu
