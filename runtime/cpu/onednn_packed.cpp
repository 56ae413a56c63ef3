// runtime/cpu/onednn_packed.cpp — oneDNN matmuls on weights reordered ONCE into the layout its
// kernel chose (runtime/cpu/onednn_gemm.h, runtime/kernels/matmul.h): the integer Linear's int8
// weights, and frozen inference's fp32 or bf16 weights (autograd/frozen.h). The calls on
// operands as they lie, and what every call shares, are in onednn_gemm.cpp / onednn_detail.h.
// Compiled with MASE_HAS_DNNL when CMake found libdnnl; otherwise nothing can be packed here.
#include <cstdint>
#include <memory>

#include "runtime/cpu/onednn_gemm.h"

#ifdef MASE_HAS_DNNL
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "runtime/cpu/onednn_detail.h"
#include "runtime/cpu_features.h"
#endif

namespace mase::cpu {

#ifdef MASE_HAS_DNNL
using namespace onednn_detail;

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
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, cd), attr, engine());
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

// ---- weights reordered once (frozen inference): fp32, or rounded to bf16 once ----

struct OnednnWeights {
  int64_t N = 0, K = 0;
  bool bf16 = false;  // W's elements (and so A's, rounded at each call): bf16, else f32
  dnnl::memory w;     // W in the layout of the kernel oneDNN chose
  mutable std::mutex mu;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, bool>, dnnl::matmul> prims;
};

namespace {
// (M, K) × (K, N) (+ bias (1, N) f32) → (M, N) f32, A and W of `type`; weights in `wd`
dnnl::matmul::primitive_desc packed_pd(dt type, int64_t M, int64_t N, int64_t K, int64_t lda,
                                       int64_t ldc, const dnnl::memory::desc& wd, bool bias) {
  const dnnl::memory::desc ad({M, K}, type, dnnl::memory::dims{lda, 1});
  const dnnl::memory::desc cd({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
  const dnnl::memory::desc bd =
      bias ? dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::dims{N, 1}) : dnnl::memory::desc();
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, wd, bd, cd), own_scratchpad(),
                                      engine());
}

// W (N, K) with leading dimension ldw, of `type` (bf16: already rounded, dense), reordered
// into the layout the kernel for a large batch wants; other M reuse it (as for int8, tested)
std::shared_ptr<const OnednnWeights> pack(dt type, const void* W, int64_t ldw, int64_t N,
                                          int64_t K) {
  one_omp_thread();
  auto P = std::make_shared<OnednnWeights>();
  P->N = N;
  P->K = K;
  P->bf16 = type == dt::bf16;
  try {
    const dnnl::memory::desc any({K, N}, type, dnnl::memory::format_tag::any);
    const auto pd = packed_pd(type, 4096, N, K, K, N, any, true);
    P->w = reordered({{K, N}, type, dnnl::memory::dims{1, ldw}}, W, pd.weights_desc());
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return P;
}
}  // namespace

std::shared_ptr<const OnednnWeights> onednn_f32_pack(const float* W, int64_t ldw, int64_t N,
                                                     int64_t K) {
  if (!onednn_enabled() || N == 0 || K == 0) return nullptr;
  return pack(dt::f32, W, ldw, N, K);
}

std::shared_ptr<const OnednnWeights> onednn_bf16_pack(const float* W, int64_t ldw, int64_t N,
                                                      int64_t K) {
  if (!onednn_bf16_active() || N == 0 || K == 0) return nullptr;
  std::vector<uint16_t> w16;  // rounded once (the same bits as every bf16 path), then reordered
  return pack(dt::bf16, to_bf16(w16, W, N, K, ldw), K, N, K);
}

void onednn_packed_linear(float* C, int64_t ldc, const float* A, int64_t lda, int64_t M,
                          const OnednnWeights& W, const float* bias) {
  const int64_t N = W.N, K = W.K;
  if (M <= 0) return;
  // bf16: A rounded into a dense copy first (as onednn_bf16_gemm does), which the blocks read
  thread_local std::vector<uint16_t> a16;
  const void* a = W.bf16 ? static_cast<const void*>(to_bf16(a16, A, M, K, lda)) : A;
  const int64_t ld = W.bf16 ? K : lda;
  const dt type = W.bf16 ? dt::bf16 : dt::f32;
  const size_t esize = W.bf16 ? 2 : 4;
  const bool has_bias = bias != nullptr;
  const int64_t step = block_rows(M), tail = last_block(M, step);
  one_omp_thread();
  auto make = [&](int64_t m) {
    return cached(W.mu, W.prims, std::make_tuple(m, ld, ldc, has_bias),
                  [&] { return packed_pd(type, m, N, K, ld, ldc, W.w.get_desc(), has_bias); });
  };
  const dnnl::matmul full = make(std::min(step, M)), last = make(tail);
  const char* rows = static_cast<const char*>(a);
  for_blocks(M, step, [&](int64_t r0, int64_t m) {
    run_packed(m == tail ? last : full, type, rows + size_t(r0 * ld) * esize, ld, m, K, W.w,
               C + r0 * ldc, ldc, N, DNNL_ARG_BIAS, bias);
  });
}

bool onednn_packed_bf16(const OnednnWeights& W) { return W.bf16; }
size_t onednn_packed_bytes(const OnednnWeights& W) { return W.w.get_desc().get_size(); }

#else  // no oneDNN in this build

struct OnednnInt8Weights {};
bool onednn_int8_available() { return false; }
std::shared_ptr<const OnednnInt8Weights> onednn_int8_pack(const int8_t*, int64_t, const float*,
                                                          int64_t, int64_t) {
  return nullptr;
}
void onednn_int8_gemm(float*, int64_t, const int8_t*, int64_t, int64_t, const OnednnInt8Weights&,
                      float, const float*) {}
size_t onednn_int8_bytes(const OnednnInt8Weights&) { return 0; }
struct OnednnWeights {};
std::shared_ptr<const OnednnWeights> onednn_f32_pack(const float*, int64_t, int64_t, int64_t) {
  return nullptr;
}
std::shared_ptr<const OnednnWeights> onednn_bf16_pack(const float*, int64_t, int64_t, int64_t) {
  return nullptr;
}
void onednn_packed_linear(float*, int64_t, const float*, int64_t, int64_t, const OnednnWeights&,
                          const float*) {}
bool onednn_packed_bf16(const OnednnWeights&) { return false; }
size_t onednn_packed_bytes(const OnednnWeights&) { return 0; }

#endif

}  // namespace mase::cpu
