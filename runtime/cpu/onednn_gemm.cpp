// runtime/cpu/onednn_gemm.cpp — GEMMs through oneDNN's matmul primitive (see onednn_gemm.h):
// fp32, bf16 operands on CPUs with bf16 units, and int8 weights of the integer Linear.
// Compiled with MASE_HAS_DNNL when CMake found libdnnl; otherwise every entry says "not here"
// and our own kernels and OpenBLAS run everything.
#include "runtime/cpu/onednn_gemm.h"

#include <cstdlib>
#include <cstring>

#ifdef MASE_HAS_DNNL
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"
#endif

namespace mase::cpu {

#ifdef MASE_HAS_DNNL
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
void one_omp_thread() {
  // libgomp came in with libdnnl; found by name so that nothing here links OpenMP itself
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set) set(1);
}

constexpr int64_t kMinBlockRows = 16;  // fewer rows a thread: one block on the calling thread
constexpr int64_t kMinBlockCols = 64;  // (or blocks of columns, where the matrix allows)

// The blocks of M rows: `step` rows each, the last one shorter.
int64_t block_rows(int64_t M) {
  const int64_t n = std::clamp<int64_t>(M / kMinBlockRows, 1, num_threads());
  const int64_t step = std::max<int64_t>((M + n - 1) / n, 1);
  return (step + 7) / 8 * 8;  // whole cache lines of C where ldc allows
}

// The size of the last of the blocks of `step` that cover `extent` (≥ 1)
int64_t last_block(int64_t extent, int64_t step) { return extent - (extent - 1) / step * step; }

// The blocks of N columns, for a matrix with too few rows: whole 64-column panels each.
int64_t block_cols(int64_t N) {
  const int64_t n = std::clamp<int64_t>(N / kMinBlockCols, 1, num_threads());
  return ((N + n - 1) / n + kMinBlockCols - 1) / kMinBlockCols * kMinBlockCols;
}

// f(start, size) for each block of `step` rows (or columns) of M, in parallel; make primitives
// first.
template <class F>
void for_blocks(int64_t M, int64_t step, F&& f) {
  const int64_t n = (M + step - 1) / step;
  if (n <= 1) {
    one_omp_thread();
    f(int64_t{0}, M);
    return;
  }
  parallel_for(0, n, 1, [&](int64_t i0, int64_t i1) {
    one_omp_thread();
    for (int64_t i = i0; i < i1; ++i) f(i * step, std::min(step, M - i * step));
  });
}

// A primitive's scratch memory (its packed copies of operand panels) belongs by default to the
// primitive, so two blocks running one primitive at once would share it. Each thread brings
// its own instead (scratchpad mode "user").
dnnl::primitive_attr own_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}
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

// Runs prim on this thread's stream, with this thread's scratchpad, and waits for it.
void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  Cache& c = cache();
  thread_local dnnl::stream stream(c.engine);
  args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(prim, c.engine));
  prim.execute(stream, args);
  stream.wait();
}

// A (1, N) f32 vector (a bias, or a post-op's operand) as oneDNN memory.
dnnl::memory row_vector(const float* v, int64_t N) {
  return dnnl::memory({{1, N}, dt::f32, dnnl::memory::dims{N, 1}}, cache().engine,
                      const_cast<float*>(v));
}

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

// One block of a matmul on a weight packed once (w): A's m rows (elements of a_type) and C's,
// and a (1, N) f32 vector bound to vec_arg when given (the bias, or a post-op's operand).
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

// A weight matrix as it lies (`plain`: Wᵀ (K, N) by strides over W (N, K)) copied once into
// `layout`, the blocked layout a primitive made with format_tag::any chose for it.
dnnl::memory reordered(const dnnl::memory::desc& plain, const void* data,
                       const dnnl::memory::desc& layout) {
  Cache& c = cache();
  dnnl::memory dst(layout, c.engine), src(plain, c.engine, const_cast<void*>(data));
  dnnl::stream stream(c.engine);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  return dst;
}

// A packed weight's primitive for this call's key (M, strides, ...), made by `make` (a
// primitive_desc) on first use and kept with the weight.
template <class Map, class Key, class Make>
dnnl::matmul cached(std::mutex& mu, Map& prims, const Key& key, Make&& make) {
  std::lock_guard lock(mu);
  auto it = prims.find(key);
  if (it == prims.end()) {
    if (prims.size() > 64) prims.clear();  // many batch shapes: start over
    it = prims.emplace(key, dnnl::matmul(make())).first;
  }
  return it->second;
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

// ---- int8 ----

struct OnednnInt8Weights {
  int64_t N = 0, K = 0;
  std::vector<float> b_scale;  // (N)
  std::vector<float> zeros;    // (N): the bias when there is none (see onednn_int8_gemm)
  dnnl::memory w;              // B in the layout of the kernel oneDNN chose
  mutable std::mutex mu;
  // per (M, lda, ldc, a_scale): the primitive, its scales baked in
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, float>, dnnl::matmul> prims;
};

namespace {

// the matmul (M, K) s8 × (K, N) s8 → (M, N) f32, output scales per column, the bias as a
// binary add after them; weights in `wd` (format any: oneDNN chooses)
dnnl::matmul::primitive_desc int8_pd(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldc,
                                     const dnnl::memory::desc& wd, const std::vector<float>& scales) {
  dnnl::primitive_attr attr = own_scratchpad();
  attr.set_output_scales(1 << 1, scales);
  dnnl::post_ops po;
  po.append_binary(dnnl::algorithm::binary_add,
                   dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::dims{N, 1}));
  attr.set_post_ops(po);
  const dnnl::memory::desc ad({M, K}, dt::s8, dnnl::memory::dims{lda, 1});
  const dnnl::memory::desc cd({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, cd), attr, cache().engine);
}

}  // namespace

bool onednn_int8_available() {
  const CpuFeatures& f = cpu_features();
  return onednn_enabled() && ((f.avx512() && f.avx512_vnni) || f.amx_int8);
}

std::shared_ptr<const OnednnInt8Weights> onednn_int8_pack(const int8_t* B, int64_t ldb,
                                                          const float* b_scale, int64_t N,
                                                          int64_t K) {
  if (!onednn_int8_available() || N == 0 || K == 0) return nullptr;
  one_omp_thread();
  auto W = std::make_shared<OnednnInt8Weights>();
  W->N = N;
  W->K = K;
  W->b_scale.assign(b_scale, b_scale + N);
  W->zeros.assign(size_t(N), 0.0f);
  try {
    // the layout the kernel for a large batch wants; smaller M reuse it (tested)
    const dnnl::memory::desc any({K, N}, dt::s8, dnnl::memory::format_tag::any);
    const auto pd = int8_pd(4096, N, K, K, N, any, W->b_scale);
    W->w = reordered({{K, N}, dt::s8, dnnl::memory::dims{1, ldb}}, B, pd.weights_desc());
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return W;
}

void onednn_int8_gemm(float* C, int64_t ldc, const int8_t* A, int64_t lda, int64_t M,
                      const OnednnInt8Weights& W, float a_scale, const float* bias) {
  const int64_t N = W.N, K = W.K;
  if (M <= 0) return;
  const int64_t step = block_rows(M), tail = last_block(M, step);
  one_omp_thread();
  auto make = [&](int64_t m) {
    return cached(W.mu, W.prims, std::make_tuple(m, lda, ldc, a_scale), [&] {
      std::vector<float> scales(static_cast<size_t>(N));
      for (int64_t j = 0; j < N; ++j) scales[size_t(j)] = a_scale * W.b_scale[size_t(j)];
      return int8_pd(m, N, K, lda, ldc, W.w.get_desc(), scales);
    });
  };
  const dnnl::matmul full = make(std::min(step, M)), last = make(tail);
  // a bias of zeros when there is none: x·0 = −0 for a negative sum, and the reference's
  // fma(s, scale, +0) gives +0 — the add keeps the bits the same (and costs nothing: fused)
  const float* b = bias ? bias : W.zeros.data();
  for_blocks(M, step, [&](int64_t r0, int64_t m) {
    run_packed(m == tail ? last : full, dt::s8, A + r0 * lda, lda, m, K, W.w, C + r0 * ldc, ldc, N,
               DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, b);
  });
}

size_t onednn_int8_bytes(const OnednnInt8Weights& W) {
  return W.w.get_desc().get_size() + 4 * (W.b_scale.size() + W.zeros.size());
}

// ---- fp32 weights reordered once (frozen inference) ----

struct OnednnF32Weights {
  int64_t N = 0, K = 0;
  dnnl::memory w;  // W in the layout of the kernel oneDNN chose
  mutable std::mutex mu;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, bool>, dnnl::matmul> prims;
};

namespace {
// (M, K) f32 × (K, N) f32 (+ bias (1, N)) → (M, N) f32; weights in `wd`
dnnl::matmul::primitive_desc f32_pd(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldc,
                                    const dnnl::memory::desc& wd, bool bias) {
  const dnnl::memory::desc ad({M, K}, dt::f32, dnnl::memory::dims{lda, 1});
  const dnnl::memory::desc cd({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
  const dnnl::memory::desc bd =
      bias ? dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::dims{N, 1}) : dnnl::memory::desc();
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, bd, cd), own_scratchpad(),
                                      cache().engine);
}
}  // namespace

std::shared_ptr<const OnednnF32Weights> onednn_f32_pack(const float* W, int64_t ldw, int64_t N,
                                                        int64_t K) {
  if (!onednn_enabled() || N == 0 || K == 0) return nullptr;
  one_omp_thread();
  auto P = std::make_shared<OnednnF32Weights>();
  P->N = N;
  P->K = K;
  try {
    // the layout the kernel for a large batch wants; other M reuse it (as for int8, tested)
    const dnnl::memory::desc any({K, N}, dt::f32, dnnl::memory::format_tag::any);
    const auto pd = f32_pd(4096, N, K, K, N, any, true);
    P->w = reordered({{K, N}, dt::f32, dnnl::memory::dims{1, ldw}}, W, pd.weights_desc());
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return P;
}

void onednn_f32_packed_linear(float* C, int64_t ldc, const float* A, int64_t lda, int64_t M,
                              const OnednnF32Weights& W, const float* bias) {
  const int64_t N = W.N, K = W.K;
  if (M <= 0) return;
  const int64_t step = block_rows(M), tail = last_block(M, step);
  one_omp_thread();
  auto make = [&](int64_t m) {
    return cached(W.mu, W.prims, std::make_tuple(m, lda, ldc, bias != nullptr),
                  [&] { return f32_pd(m, N, K, lda, ldc, W.w.get_desc(), bias != nullptr); });
  };
  const dnnl::matmul full = make(std::min(step, M)), last = make(tail);
  for_blocks(M, step, [&](int64_t r0, int64_t m) {
    run_packed(m == tail ? last : full, dt::f32, A + r0 * lda, lda, m, K, W.w, C + r0 * ldc, ldc, N,
               DNNL_ARG_BIAS, bias);
  });
}

size_t onednn_f32_bytes(const OnednnF32Weights& W) { return W.w.get_desc().get_size(); }

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
struct OnednnInt8Weights {};
bool onednn_int8_available() { return false; }
std::shared_ptr<const OnednnInt8Weights> onednn_int8_pack(const int8_t*, int64_t, const float*,
                                                          int64_t, int64_t) {
  return nullptr;
}
void onednn_int8_gemm(float*, int64_t, const int8_t*, int64_t, int64_t, const OnednnInt8Weights&,
                      float, const float*) {}
size_t onednn_int8_bytes(const OnednnInt8Weights&) { return 0; }
struct OnednnF32Weights {};
std::shared_ptr<const OnednnF32Weights> onednn_f32_pack(const float*, int64_t, int64_t, int64_t) {
  return nullptr;
}
void onednn_f32_packed_linear(float*, int64_t, const float*, int64_t, int64_t,
                              const OnednnF32Weights&, const float*) {}
size_t onednn_f32_bytes(const OnednnF32Weights&) { return 0; }
void set_onednn_bf16_forced(bool) {}
std::string onednn_version() { return ""; }

#endif

}  // namespace mase::cpu
