// bench/bench_gemm_ladder.cpp — the ladder suite: how a GEMM climbs from a triple loop to the
// machine's peak, one rung at a time, each rung timed against OpenBLAS sgemm on the same shape
// in the same run, and the FMA peak of this CPU measured in the same process.
//
// The product is C (M, N) = A (M, K)·Bᵀ, B (N, K) — a Linear's y = x·Wᵀ, the eval shape.
//   ladder/fma_peak         FMAs on registers only, every thread: the ceiling (no memory)
//   ladder/<rung>/<shape>   flops; vs_sgemm = sgemm time / rung time, paired call by call
//                           (time_paired); vs_peak = flops / fma_peak's flops (reporter)
// The rungs:
//   naive      for i, j: C[i][j] = Σ_k A[i][k]·B[j][k] — a dot product per output, scalar
//              (the compiler may not reorder a float sum, so it cannot vectorise it)
//   loops      Bᵀ copied once to (K, N); for i, k: C[i][:] += A[i][k]·Bᵀ[k][:] — the inner loop
//              is now an axpy over contiguous j: vectorised, but C's row goes to L1 and back
//              for every k (one load + one store per FMA)
//   blocked    the same in tiles (64 rows × 256 k × 512 columns) so the working set stays
//              in L2, still through memory for every FMA
//   packed/avx2, packed/avx512   runtime/kernels/sgemm_packed.h: B packed once, an MR × nr
//              tile of C held in registers over all of K (one load of B per MR FMAs)
//   onednn     oneDNN's matmul with its own packed weights (when built with libdnnl-dev)
// Slow rungs run on fewer rows (naive M = 64, loops/blocked M = 512): FLOP/s do not depend on
// M once M is a few tiles, and sgemm is paired on the same reduced shape.
// Every rung is validated once against a double-precision dot product on 64 sampled entries.
//
// Read next: runtime/kernels/sgemm_packed.h, runtime/cpu/sgemm_avx512.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "bench/common.h"
#include "bench/peak.h"
#include "runtime/cpu/blas.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sgemm_packed.h"
#include "runtime/parallel.h"
#include "runtime/random.h"
#ifdef MASE_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace mase::bench {
namespace gemm_ladder_suite {

using Gemm = std::function<void(float* C, const float* A, int64_t M)>;  // one call of a rung

// ---- the teaching rungs (not product code) ----------------------------------------------------

void naive(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K) {
  parallel_for(0, M, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float s = 0;
        for (int64_t k = 0; k < K; ++k) s += A[i * K + k] * B[j * K + k];
        C[i * N + j] = s;
      }
  });
}

// Bt is (K, N): C[i][:] += A[i][k]·Bt[k][:] over rows [i0, i1), k in [k0, k1), j in [j0, j1).
inline void axpy_tile(float* C, const float* A, const float* Bt, int64_t N, int64_t K, int64_t i0,
                      int64_t i1, int64_t k0, int64_t k1, int64_t j0, int64_t j1) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t k = k0; k < k1; ++k) {
      const float a = A[i * K + k];
      float* c = C + i * N;
      const float* b = Bt + k * N;
      for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
    }
}

void loops(float* C, const float* A, const float* Bt, int64_t M, int64_t N, int64_t K) {
  parallel_for(0, M, 8, [&](int64_t i0, int64_t i1) {
    std::fill(C + i0 * N, C + i1 * N, 0.0f);
    axpy_tile(C, A, Bt, N, K, i0, i1, 0, K, 0, N);
  });
}

void blocked(float* C, const float* A, const float* Bt, int64_t M, int64_t N, int64_t K) {
  constexpr int64_t MC = 64, KC = 256, NC = 512;
  parallel_for(0, (M + MC - 1) / MC, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t i0 = b * MC, i1 = std::min(M, i0 + MC);
      std::fill(C + i0 * N, C + i1 * N, 0.0f);
      for (int64_t j0 = 0; j0 < N; j0 += NC)
        for (int64_t k0 = 0; k0 < K; k0 += KC)
          axpy_tile(C, A, Bt, N, K, i0, i1, k0, std::min(K, k0 + KC), j0, std::min(N, j0 + NC));
    }
  });
}

// ---- the ceiling: FMAs on registers (bench/peak.h) ----------------------------------------------
void add_peak() {
  add("ladder/fma_peak", [](benchmark::State& st) {
    const bool wide = cpu::f32_isa_supported(cpu::F32Isa::avx512);
    time_peak(st, wide ? PeakOp::fma_avx512 : PeakOp::fma_avx2);
    st.SetLabel(wide ? "AVX-512 FMA, 24 accumulators per thread" : "AVX2 FMA, 12 accumulators per thread");
  }, Timing::manual);
}

// 64 sampled entries against a double dot product (1e-5 · Σ|a·b|, as bench_gemm.cpp).
std::string check(const float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K) {
  for (uint64_t s = 0; s < 64; ++s) {
    const int64_t i = int64_t(philox_word(3, s, 0) % uint64_t(M)), j = int64_t(philox_word(3, s, 1) % uint64_t(N));
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < K; ++k) {
      ref += double(A[i * K + k]) * B[j * K + k];
      mag += std::abs(double(A[i * K + k]) * B[j * K + k]);
    }
    if (!(std::abs(C[i * N + j] - ref) <= 1e-5 * mag + 1e-6))
      return cat("C[", i, ", ", j, "] = ", C[i * N + j], ", expected ", ref);
  }
  return "";
}

struct Shape3 {
  int64_t M, N, K;
};

// rung(name, shape, make): make(A, B, M, N, K) returns the rung's call (packing happens there).
void add_rung(const std::string& rung, Shape3 s,
              std::function<Gemm(const float* B, int64_t N, int64_t K)> make) {
  const std::string name = cat("ladder/", rung, "/", s.M, "x", s.N, "x", s.K);
  add(name, [=](benchmark::State& st) {
    Tensor A = uniform_tensor({s.M, s.K}, 1), B = uniform_tensor({s.N, s.K}, 2);
    Tensor C = Tensor::empty({s.M, s.N}), C2 = Tensor::empty({s.M, s.N});
    const float *a = A.data<float>(), *b = B.data<float>();
    float *c = C.data<float>(), *c2 = C2.data<float>();
    const Gemm g = make(b, s.N, s.K);
    g(c, a, s.M);
    if (!validate_once(st, name, [&] { return check(c, a, b, s.M, s.N, s.K); })) return;
    // OpenBLAS itself, not cpu::gemm: that hands BERT's shapes to oneDNN (matmul.h)
    auto sgemm = [&] {
      blas::sgemm(blas::NoTrans, blas::DoTrans, int(s.M), int(s.N), int(s.K), 1.f, a, int(s.K), b,
                  int(s.K), 0.f, c2, int(s.N));
    };
    time_paired(st, [&] { g(c, a, s.M); }, sgemm, "vs_sgemm");
    set_flops(st, 2.0 * double(s.M) * double(s.N) * double(s.K));
    st.SetLabel(cat("M=", s.M, " N=", s.N, " K=", s.K));
  }, Timing::manual)->MinTime(0.5);
  relative_to(name, "ladder/fma_peak", "vs_peak");
}

Gemm packed(cpu::F32Isa isa, const float* B, int64_t N, int64_t K) {
  auto p = std::make_shared<cpu::F32PackedB>(cpu::sgemm_pack_b(B, K, N, K, isa));
  return [p, K, N](float* C, const float* A, int64_t M) { cpu::sgemm_packed(C, N, A, K, M, *p, nullptr); };
}

Gemm transposed(void (*f)(float*, const float*, const float*, int64_t, int64_t, int64_t),
                const float* B, int64_t N, int64_t K) {
  auto bt = std::make_shared<std::vector<float>>(size_t(N * K));
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) (*bt)[size_t(k * N + j)] = B[j * K + k];
  return [bt, f, N, K](float* C, const float* A, int64_t M) { f(C, A, bt->data(), M, N, K); };
}

#ifdef MASE_HAVE_DNNL
// oneDNN's matmul, weights reordered once into the layout its kernel wants ("any").
Gemm onednn(const float* B, int64_t N, int64_t K) {
  struct State {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::memory w;
    std::map<int64_t, dnnl::matmul> prims;  // by M
    int64_t N, K;
  };
  auto s = std::make_shared<State>();
  s->N = N, s->K = K;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc wuser({K, N}, dt::f32, tag::ba);  // B (N, K) row-major is (K, N) in "ba"
  dnnl::memory wu(wuser, s->eng, const_cast<float*>(B));
  auto pd_for = [s](int64_t M) {
    dnnl::matmul::desc d(dnnl::memory::desc({M, s->K}, dt::f32, tag::ab),
                         dnnl::memory::desc({s->K, s->N}, dt::f32, tag::any),
                         dnnl::memory::desc({M, s->N}, dt::f32, tag::ab));
    return dnnl::matmul::primitive_desc(d, s->eng);
  };
  auto pd = pd_for(kTokens);
  s->w = dnnl::memory(pd.weights_desc(), s->eng);
  dnnl::reorder(wu, s->w).execute(s->strm, wu, s->w);
  s->strm.wait();
  return [s, pd_for](float* C, const float* A, int64_t M) {
    auto it = s->prims.find(M);
    if (it == s->prims.end()) it = s->prims.emplace(M, dnnl::matmul(pd_for(M))).first;
    dnnl::memory a(dnnl::memory::desc({M, s->K}, dt::f32, tag::ab), s->eng, const_cast<float*>(A));
    dnnl::memory c(dnnl::memory::desc({M, s->N}, dt::f32, tag::ab), s->eng, C);
    it->second.execute(s->strm, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, s->w}, {DNNL_ARG_DST, c}});
    s->strm.wait();
  };
}

// The same matmul on the weights as they are (B (N, K) row-major read as (K, N) "ba"): no
// reorder, no copy kept — what a Linear could call without caching anything per weight.
Gemm onednn_plain(const float* B, int64_t N, int64_t K) {
  struct State {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    std::map<int64_t, dnnl::matmul> prims;  // by M
    int64_t N, K;
    const float* B;
  };
  auto s = std::make_shared<State>();
  s->N = N, s->K = K, s->B = B;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  return [s](float* C, const float* A, int64_t M) {
    dnnl::memory::desc ad({M, s->K}, dt::f32, tag::ab), wd({s->K, s->N}, dt::f32, tag::ba),
        cd({M, s->N}, dt::f32, tag::ab);
    auto it = s->prims.find(M);
    if (it == s->prims.end())
      it = s->prims.emplace(M, dnnl::matmul(dnnl::matmul::primitive_desc(
                                   dnnl::matmul::desc(ad, wd, cd), s->eng))).first;
    dnnl::memory a(ad, s->eng, const_cast<float*>(A)), w(wd, s->eng, const_cast<float*>(s->B)),
        c(cd, s->eng, C);
    it->second.execute(s->strm, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c}});
    s->strm.wait();
  };
}
#endif

}  // namespace gemm_ladder_suite

void register_gemm_ladder() {
  using namespace gemm_ladder_suite;
  add_peak();
  std::vector<Shape3> shapes = {{4096, 4096, 4096}};
  for (const BertConfig& cfg : kBertConfigs) {
    const int64_t H = cfg.hidden, F = cfg.ffn;
    for (auto [in, out] : {std::pair{H, H}, {H, F}, {F, H}}) shapes.push_back({kTokens, out, in});
  }
  const Shape3 big = shapes[0];
  add_rung("naive", {64, big.N, big.K}, [](const float* B, int64_t N, int64_t K) {
    return Gemm([B, N, K](float* C, const float* A, int64_t M) { naive(C, A, B, M, N, K); });
  });
  add_rung("loops", {512, big.N, big.K},
           [](const float* B, int64_t N, int64_t K) { return transposed(loops, B, N, K); });
  add_rung("blocked", {512, big.N, big.K},
           [](const float* B, int64_t N, int64_t K) { return transposed(blocked, B, N, K); });
  for (const Shape3& s : shapes) {
    for (cpu::F32Isa isa : {cpu::F32Isa::avx2, cpu::F32Isa::avx512}) {
      if (!cpu::f32_isa_supported(isa)) continue;
      add_rung(cat("packed_", cpu::f32_isa_name(isa)), s,
               [isa](const float* B, int64_t N, int64_t K) { return packed(isa, B, N, K); });
    }
#ifdef MASE_HAVE_DNNL
    add_rung("onednn", s, onednn);
    add_rung("onednn_plain", s, onednn_plain);
#endif
  }
}

}  // namespace mase::bench
