// bench/bench_sdpa.cpp — the sdpa suite: fused attention (runtime/cpu/sdpa.cpp) against the
// naive composition sdpa_reference (matmul, scale, mask, softmax, dropout, matmul), in FLOP/s.
//
// Shapes: heads of HS = 64, NH = 8 (bert-small), T = 128, 256, 512 with B = 4096 / T, so every
// T has 4096 tokens and a forward + backward takes ~0.1 s. q, k, v are head-split views of
// three (B, T, C) projections and the mask is a (B, 1, 1, T) padding mask, as in BERT.
//   sdpa/fwd/T…          out = sdpa(q, k, v, mask)                 4·B·NH·T²·HS flops
//   sdpa/fwd_bwd/T…      the same, then backward(out, dout)       12·B·NH·T²·HS flops
//   sdpa/fwd_bwd_dropout/T256   with attention dropout p = 0.1 (BERT's training setting)
// The flops counted are the products of the maths (QKᵀ and PV forward; dV, dP, dQ, dK
// backward), the same for both versions, although the fused backward also recomputes QKᵀ.
// Each iteration runs the fused version (timed) and then the naive one (common.h,
// time_paired): vs_naive = time(naive) / time(fused) is the speedup at the same moments, and
// naive_flops the naive version's rate; vs_4096 compares with sgemm 4096³ when the gemm suite
// runs in the same invocation; peak_MB and naive_peak_MB are the memory each version
// allocates at the peak of one call (allocator statistics). Validated once before timing:
// forward outputs of both versions against attention computed in double on 32 sampled rows,
// and the fused gradients against the naive ones (autograd through ops that have their own
// gradchecks).
//
// Read next: runtime/cpu/sdpa.cpp, docs/performance.md ("Attention").
#include <cmath>

#include "autograd/ops.h"
#include "bench/attention_check.h"
#include "bench/common.h"
#include "runtime/parallel.h"

namespace mase::bench {
namespace sdpa_suite {

constexpr int64_t kHeads = 8;  // bert-small

struct Problem {
  int64_t B = 0, T = 0;
  bool backward = false;
  double dropout = 0.0;
  int64_t C() const { return kHeads * kHeadSize; }
  double flops() const {
    return (backward ? 12.0 : 4.0) * B * kHeads * double(T) * T * kHeadSize;
  }
};

struct Inputs {
  Tensor qx, kx, vx;  // (B, T, C) projections (leaves when backward is timed)
  Tensor mask;        // (B, 1, 1, T), 0 everywhere: BERT's mask of a batch without padding
  Tensor dout;        // (B, NH, T, HS)
};

Inputs make_inputs(const Problem& p) {
  Inputs in;
  in.qx = normal_tensor({p.B, p.T, p.C()}, 1).set_requires_grad(p.backward);
  in.kx = normal_tensor({p.B, p.T, p.C()}, 2).set_requires_grad(p.backward);
  in.vx = normal_tensor({p.B, p.T, p.C()}, 3).set_requires_grad(p.backward);
  in.mask = Tensor::zeros({p.B, 1, 1, p.T});
  in.dout = normal_tensor({p.B, kHeads, p.T, kHeadSize}, 4);
  return in;
}

// (B, T, C) -> (B, NH, T, HS) view, as BertSelfAttention splits its heads
Tensor heads(const Tensor& x) {
  return transpose(view(x, {x.size(0), x.size(1), kHeads, kHeadSize}), 1, 2);
}

// One forward (and backward) of the fused or the naive version; the leaves' gradients
// accumulate from call to call (the same work for both versions).
Tensor run(const Problem& p, const Inputs& in, bool fused, uint64_t seed = 1) {
  Generator gen(seed);
  const Tensor q = heads(in.qx), k = heads(in.kx), v = heads(in.vx);
  const bool train = p.dropout > 0;
  Tensor out = fused ? sdpa(q, k, v, in.mask, p.dropout, train, gen)
                     : sdpa_reference(q, k, v, in.mask, p.dropout, train, gen);
  if (p.backward) backward(out, in.dout);
  return out;
}

// --precision bf16 rounds the products' operands to bf16 (8 significant bits) in the fused
// kernel (its AMX tiles) and in the naive composition's GEMMs alike: outputs agree with the
// double reference to ~1e-2 and the two versions' gradients to ~1e-1, the bounds
// tests/autograd/test_sdpa_amx.cpp holds its kernel to. fp32 keeps the defaults.
AttentionTolerance tolerance() {
  if (cpu_gemm_precision() != GemmPrecision::bf16) return {};
  return {3e-2, 3e-2, 1.2e-1, 1e-1, /*naive_too=*/true};
}

std::string check_forward(const Problem& p, const Inputs& in) {
  return check_sdpa_forward([&](bool fused) { return run(p, in, fused); }, in.qx, in.kx, in.vx,
                            kHeads, tolerance());
}

std::string check_backward(const Problem& p, const Inputs& in) {
  return check_sdpa_backward([&](bool fused) { run(p, in, fused); }, {in.qx, in.kx, in.vx},
                             tolerance());
}

void add_problem(const std::string& name, const Problem& p) {
  add(name, [name, p](benchmark::State& st) {
    const Inputs in = make_inputs(p);
    if (!validate_once(st, name, [&] {
          return p.backward ? check_backward(p, in) : check_forward(p, in);
        }))
      return;
    st.counters["peak_MB"] = peak_alloc_mb(Device::cpu(), [&] { run(p, in, true); });
    st.counters["naive_peak_MB"] = peak_alloc_mb(Device::cpu(), [&] { run(p, in, false); });
    const double naive_s = time_paired(st, [&] { run(p, in, true); },
                                       [&] { run(p, in, false); }, "vs_naive");
    set_flops(st, p.flops());
    st.counters["naive_flops"] = naive_s > 0 ? p.flops() * double(st.iterations()) / naive_s : 0;
    st.SetLabel(cat("B=", p.B, " NH=", kHeads, " T=", p.T, " HS=", kHeadSize));
  }, Timing::manual);
  relative_to(name, "gemm/sgemm/4096x4096x4096", "vs_4096");
}

}  // namespace sdpa_suite

void register_sdpa() {
  using namespace sdpa_suite;
  for (bool bwd : {false, true}) {
    for (int64_t T : {128, 256, 512}) {
      const Problem p{4096 / T, T, bwd, 0.0};
      add_problem(cat("sdpa/", bwd ? "fwd_bwd" : "fwd", "/T", T), p);
    }
  }
  add_problem("sdpa/fwd_bwd_dropout/T256", Problem{16, 256, true, 0.1});
}

}  // namespace mase::bench
