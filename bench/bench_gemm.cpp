// bench/bench_gemm.cpp — the gemm suite: OpenBLAS sgemm, the compute limit of the machine.
//
// First sgemm 4096³ (registered first of all, so it is the first figure printed), then the
// GEMMs of BERT training at B·T = 8192 token rows, each with a counter vs_4096 = its FLOP/s
// over 4096³'s — how much of the machine a shape can use:
//   Linear x (8192, in) · Wᵀ, W (out, in), for H→H, H→4H, 4H→H of bert-tiny/mini/small/base:
//     fwd  y  = x·Wᵀ     M = 8192, N = out, K = in    (W read with the transpose flag)
//     dx   dx = dy·W     M = 8192, N = in,  K = out
//     dw   dW = dyᵀ·x    M = out,  N = in,  K = 8192  (dy read with the transpose flag)
//   Attention per head (bert-base, NH = 12, HS = 64; B = 8192 / T so every T has 8192 tokens):
//     qk   S = Q·Kᵀ      B·NH GEMMs of (T × HS)·(HS × T)
//     pv   O = P·V       B·NH GEMMs of (T × T)·(T × HS)
//   with Q, K, V read in place from (B, T, C) through lda = C, as autograd/ops/matmul.cpp does.
// A GEMM does 2·M·N·K flops (one multiply and one add per term). Each result is validated once
// on 64 sampled entries against a double-precision dot product (of the operands rounded to
// bf16 under --precision bf16: the products a bf16 GEMM makes, so the suite times that mode too).
//
// Read next: runtime/cpu/matmul.cpp (the calls timed here), bench/bench_elementwise.cpp.
#include <cmath>

#include "bench/common.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"
#include "runtime/random.h"

namespace mase::bench {
namespace gemm_suite {

// `batch` GEMMs C_i (M × N) = op(A_i)·op(B_i), as runtime/kernels/matmul.h takes them: row-major,
// leading dims, and each matrix's offset (elements) into A, B and C.
struct Problem {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::vector<int64_t> a_off{0}, b_off{0}, c_off{0};
  int64_t a_numel = 0, b_numel = 0, c_numel = 0;  // storage to allocate for A, B and C
  double flops() const { return 2.0 * M * N * K * static_cast<double>(a_off.size()); }
};

// A single packed GEMM with no batch.
Problem single(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  Problem p;
  p.ta = ta, p.tb = tb, p.M = M, p.N = N, p.K = K;
  p.lda = ta ? M : K;  // A is stored (K, M) when read transposed, else (M, K)
  p.ldb = tb ? K : N;
  p.ldc = N;
  p.a_numel = M * K, p.b_numel = K * N, p.c_numel = M * N;
  return p;
}

void run(const Problem& p, const float* A, const float* B, float* C) {
  if (p.a_off.size() == 1) {
    cpu::gemm<float>(p.ta, p.tb, p.M, p.N, p.K, 1.f, A, p.lda, B, p.ldb, 0.f, C, p.ldc);
  } else {
    cpu::gemm_batched<float>(p.ta, p.tb, p.M, p.N, p.K, 1.f, A, p.lda, B, p.ldb, 0.f, C, p.ldc,
                             static_cast<int64_t>(p.a_off.size()), p.a_off.data(),
                             p.b_off.data(), p.c_off.data());
  }
}

// 64 entries C_b[i, j] against Σ_k op(A_b)[i, k]·op(B_b)[k, j] in double (each operand first
// rounded to bf16 when the CPU's GEMM precision is bf16). Allowed error:
// 1e-5 · Σ_k |a·b| — about 170 roundings of f32 at the scale of the terms; a wrong operand,
// transpose or offset is off by ~Σ|a·b| / √K, at least 100× more for every K here.
std::string check(const Problem& p, const float* A, const float* B, const float* C) {
  const bool bf16 = cpu_gemm_precision() == GemmPrecision::bf16;
  auto operand = [bf16](float v) { return double(bf16 ? cpu::bf16_round(v) : v); };
  for (uint64_t s = 0; s < 64; ++s) {
    auto rnd = [s](uint64_t which, int64_t n) {
      return static_cast<int64_t>(philox_word(42, s, which) % static_cast<uint64_t>(n));
    };
    const int64_t b = rnd(0, static_cast<int64_t>(p.a_off.size()));
    const int64_t i = rnd(1, p.M), j = rnd(2, p.N);
    const float* a = A + p.a_off[b];
    const float* bb = B + p.b_off[b];
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < p.K; ++k) {
      const double x = operand(p.ta ? a[k * p.lda + i] : a[i * p.lda + k]);
      const double y = operand(p.tb ? bb[j * p.ldb + k] : bb[k * p.ldb + j]);
      ref += x * y;
      mag += std::abs(x * y);
    }
    const double got = C[p.c_off[b] + i * p.ldc + j];
    if (!(std::abs(got - ref) <= 1e-5 * mag + 1e-6))
      return cat("C[", b, "][", i, ", ", j, "] = ", got, ", expected ", ref);
  }
  return "";
}

void add_gemm(const std::string& name, const Problem& p, const std::string& label) {
  add(name, [name, p, label](benchmark::State& st) {
    Tensor A = uniform_tensor({p.a_numel}, 1), B = uniform_tensor({p.b_numel}, 2);
    Tensor C = Tensor::empty({p.c_numel});
    const float *a = A.data<float>(), *b = B.data<float>();
    float* c = C.data<float>();
    run(p, a, b, c);
    if (!validate_once(st, name, [&] { return check(p, a, b, c); })) return;
    for (auto _ : st) {
      run(p, a, b, c);
      benchmark::ClobberMemory();
    }
    set_flops(st, p.flops());
    st.SetLabel(label);
  });
}

std::string mnk(const Problem& p) { return cat("M=", p.M, " N=", p.N, " K=", p.K); }

}  // namespace gemm_suite

void register_gemm() {
  using namespace gemm_suite;
  const std::string limit = "gemm/sgemm/4096x4096x4096";
  add_gemm(limit, single(false, false, 4096, 4096, 4096), "the machine's limit");

  auto relative = [&](const std::string& name, const Problem& p, const std::string& label) {
    add_gemm(name, p, label);
    relative_to(name, limit, "vs_4096");
  };

  const int64_t R = kTokens;  // 8192 rows
  for (const BertConfig& cfg : kBertConfigs) {
    const int64_t H = cfg.hidden, F = cfg.ffn;
    const int64_t linears[3][2] = {{H, H}, {H, F}, {F, H}};  // (in, out)
    for (const auto& io : linears) {
      const int64_t in = io[0], out = io[1];
      std::string base = cat("gemm/", cfg.name, "/linear_", in, "x", out, "/");
      Problem fwd = single(false, true, R, out, in);  // y = x·Wᵀ
      Problem dx = single(false, false, R, in, out);  // dx = dy·W
      Problem dw = single(true, false, out, in, R);   // dW = dyᵀ·x
      relative(base + "fwd", fwd, mnk(fwd));
      relative(base + "dx", dx, mnk(dx));
      relative(base + "dw", dw, mnk(dw));
    }
  }

  // attention heads of bert-base, read in place from (B, T, C) activations
  const int64_t NH = kBertBase.heads, HS = kHeadSize, C = NH * HS;
  for (int64_t T : {128, 256, 512}) {
    const int64_t B = kTokens / T, n = B * NH;
    Problem qk, pv;
    qk.tb = true, qk.M = T, qk.N = T, qk.K = HS, qk.lda = C, qk.ldb = C, qk.ldc = T;
    pv.M = T, pv.N = HS, pv.K = T, pv.lda = T, pv.ldb = C, pv.ldc = HS;
    qk.a_off.resize(n), qk.b_off.resize(n), qk.c_off.resize(n);
    pv.a_off.resize(n), pv.b_off.resize(n), pv.c_off.resize(n);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < NH; ++h) {
        const int64_t i = b * NH + h, head = b * T * C + h * HS;  // head h of batch b in (B, T, C)
        // S is (B, NH, T, T), O is (B, NH, T, HS)
        qk.a_off[i] = head, qk.b_off[i] = head, qk.c_off[i] = i * T * T;
        pv.a_off[i] = i * T * T, pv.b_off[i] = head, pv.c_off[i] = i * T * HS;
      }
    }
    qk.a_numel = qk.b_numel = B * T * C, qk.c_numel = n * T * T;
    pv.a_numel = n * T * T, pv.b_numel = B * T * C, pv.c_numel = n * T * HS;
    std::string base = cat("gemm/attn/T", T, "/");
    relative(base + "qk", qk, cat(n, " x (", T, "x", HS, " · ", HS, "x", T, ")"));
    relative(base + "pv", pv, cat(n, " x (", T, "x", T, " · ", T, "x", HS, ")"));
  }
}

}  // namespace mase::bench
