// runtime/cpu/onednn_detail.h — what the two oneDNN files share: onednn_gemm.cpp (GEMMs on
// operands as they lie) and onednn_packed.cpp (weights reordered once: int8 weights, frozen
// fp32 and bf16 weights). The engine, the rule that oneDNN runs one OpenMP thread inside each
// of our blocks of rows ("one pool owns the cores", onednn_gemm.cpp), per-thread scratchpads,
// and the small wrappers every call goes through. Only for builds with oneDNN (CMake defines
// MASE_HAS_DNNL for those two files); nothing outside runtime/cpu includes it.
#pragma once
#ifndef MASE_HAS_DNNL
#error "runtime/cpu/onednn_detail.h is only for the oneDNN build of runtime/cpu/onednn_*.cpp"
#endif
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "runtime/parallel.h"

namespace mase::cpu::onednn_detail {

using dt = dnnl::memory::data_type;

const dnnl::engine& engine();  // the one CPU engine (MASE_MAX_CPU_ISA applied before it)

// libgomp's team size for this thread set to 1 (onednn_gemm.cpp says why)
void one_omp_thread();

constexpr int64_t kMinBlockRows = 16;  // fewer rows a thread: one block on the calling thread
constexpr int64_t kMinBlockCols = 64;  // (or blocks of columns, where the matrix allows)

// The blocks of M rows: `step` rows each, the last one shorter.
int64_t block_rows(int64_t M);
// The size of the last of the blocks of `step` that cover `extent` (≥ 1)
inline int64_t last_block(int64_t extent, int64_t step) {
  return extent - (extent - 1) / step * step;
}

// f(start, size) for each block of `step` rows (or columns) of M, in parallel, each on a thread
// whose OpenMP team is one thread; make the primitives first.
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

// Attributes of a primitive whose scratchpad each running thread brings ("user" mode): two
// blocks running one primitive at once must not share its packed panels.
dnnl::primitive_attr own_scratchpad();

// Runs prim on this thread's stream, with this thread's scratchpad, and waits for it.
void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args);

// A (1, N) f32 vector (a bias, or a post-op's operand) as oneDNN memory.
dnnl::memory row_vector(const float* v, int64_t N);

// One block of a matmul on a weight packed once (w): A's m rows (elements of a_type) and C's,
// and a (1, N) f32 vector bound to vec_arg when given (the bias, or a post-op's operand).
void run_packed(const dnnl::matmul& prim, dt a_type, const void* A, int64_t lda, int64_t m,
                int64_t K, const dnnl::memory& w, float* C, int64_t ldc, int64_t N, int vec_arg,
                const float* vec);

// rows × cols stored with leading dimension ld, rounded to bf16 into buf (leading dimension
// cols; bf16_from_f32's array form, parallel over the elements)
const uint16_t* to_bf16(std::vector<uint16_t>& buf, const float* X, int64_t rows, int64_t cols,
                        int64_t ld);

// A weight matrix as it lies (`plain`: Wᵀ (K, N) by strides over W (N, K)) copied once into
// `layout`, the blocked layout a primitive made with format_tag::any chose for it.
dnnl::memory reordered(const dnnl::memory::desc& plain, const void* data,
                       const dnnl::memory::desc& layout);

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

}  // namespace mase::cpu::onednn_detail
