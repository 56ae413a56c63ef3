// bench/bench_gpu_sdpa.cpp — the gpu-sdpa suite: the CUDA flash attention (cuda/sdpa_forward.cu,
// cuda/sdpa_backward.cu, through the sdpa op) against the naive composition sdpa_reference on
// the GPU (cuBLAS batched GEMMs, softmax, dropout: the (B, NH, T, T) scores materialised), in
// FLOP/s, each call of the one paired with a call of the other (gpu_time_paired).
//
//   gpu-sdpa/fwd/NH<nh>/T<t>       out = sdpa(q, k, v, mask)              4·B·NH·T²·HS flops
//   gpu-sdpa/fwd_bwd/NH<nh>/T<t>   the same, then backward(out, dout)    12·B·NH·T²·HS flops
//   gpu-sdpa/two_kernel|atomic/fwd_bwd/NH<nh>/T<t>   the same with the fp32 backward's other
//                                  algorithms (SdpaBackward, runtime/kernels/sdpa.h): the first
//                                  version's two kernels, and FlashAttention-2's atomic dQ;
//                                  plain fwd_bwd runs the default, the deterministic one-pass
//                                  kernel (cuda/sdpa_backward_fused.cu)
//   gpu-sdpa/fwd_bwd_dropout/NH12/T256   with attention dropout p = 0.1 (BERT's training)
//   gpu-sdpa/tf32x3|tf32/fwd|fwd_bwd/NH12/T<t>   the tensor-core kernels (SdpaMath, rung v3 of
//                                  the ladder): fp32-accurate tf32x3, and plain TF32
// at B = 32, HS = 64, NH = 8 (bert-small) and 12 (bert-base), T = 128, 256, 512; q, k, v are
// head-split views of three (B, T, C) projections and the mask a (B, 1, 1, T) padding mask,
// as in BERT. The flops are the products of the maths (QKᵀ and PV forward; dV, dP, dQ, dK
// backward), the same for both versions, although the fused backward recomputes QKᵀ and dP.
// Counters: flops, naive_flops, vs_naive = time(naive) / time(fused), and peak_MB /
// naive_peak_MB: what one call allocates at its peak on the GPU beyond what was in use
// (allocator statistics) — the naive version's grows with T², the fused one's with T.
// Validated once before timing: forward outputs against attention computed in double on 32
// sampled rows (both versions); fused gradients against the naive ones on the GPU (autograd
// through ops that each have their CPU == CUDA tests). PyTorch's backends at the same shapes:
// bench/torch_gpu.py.
//
// Read next: cuda/sdpa_forward.cu, docs/performance.md ("GPU kernels").
#include "autograd/ops.h"
#include "bench/attention_check.h"
#include "bench/gpu_common.h"
#include "runtime/kernels/sdpa.h"

namespace mase::bench {
namespace gpu_sdpa_suite {

constexpr int kIters = 20;

const char* math_name(SdpaMath m) {
  return m == SdpaMath::fp32 ? "fp32" : m == SdpaMath::tf32x3 ? "tf32x3" : "tf32";
}
const char* backward_name(SdpaBackward b) {
  return b == SdpaBackward::fused ? "fused" : b == SdpaBackward::atomic ? "atomic" : "two_kernel";
}

struct Problem {
  int64_t B = kBatch, NH = 12, T = 256;
  bool backward = false;
  double dropout = 0.0;
  SdpaMath math = SdpaMath::fp32;  // of the fused version
  SdpaBackward alg = SdpaBackward::fused;  // its backward (fp32 only)
  int64_t C() const { return NH * kHeadSize; }
  double flops() const { return (backward ? 12.0 : 4.0) * B * NH * double(T) * T * kHeadSize; }
};

struct Inputs {
  Tensor qx, kx, vx;  // (B, T, C) projections on the GPU (leaves when backward is timed)
  Tensor q_cpu, k_cpu, v_cpu;  // the same on the host, for the forward check
  Tensor mask;        // (B, 1, 1, T), 0 everywhere: BERT's mask of a batch without padding
  Tensor dout;        // (B, NH, T, HS)
};

Inputs make_inputs(const Problem& p) {
  Inputs in;
  in.q_cpu = normal_tensor({p.B, p.T, p.C()}, 1);
  in.k_cpu = normal_tensor({p.B, p.T, p.C()}, 2);
  in.v_cpu = normal_tensor({p.B, p.T, p.C()}, 3);
  in.qx = in.q_cpu.to(Device::cuda()).set_requires_grad(p.backward);
  in.kx = in.k_cpu.to(Device::cuda()).set_requires_grad(p.backward);
  in.vx = in.v_cpu.to(Device::cuda()).set_requires_grad(p.backward);
  in.mask = Tensor::zeros({p.B, 1, 1, p.T}, DType::f32, Device::cuda());
  in.dout = normal_tensor({p.B, p.NH, p.T, kHeadSize}, 4).to(Device::cuda());
  return in;
}

// (B, T, C) -> (B, NH, T, HS) view, as BertSelfAttention splits its heads
Tensor heads(const Tensor& x, int64_t NH) {
  return transpose(view(x, {x.size(0), x.size(1), NH, kHeadSize}), 1, 2);
}

// One forward (and backward) of the fused or the naive version; the leaves' gradients
// accumulate from call to call (the same work for both versions).
Tensor run(const Problem& p, const Inputs& in, bool fused, uint64_t seed = 1) {
  Generator gen(seed);
  sdpa_cuda_math() = p.math;
  sdpa_cuda_backward() = p.alg;
  const Tensor q = heads(in.qx, p.NH), k = heads(in.kx, p.NH), v = heads(in.vx, p.NH);
  const bool train = p.dropout > 0;
  Tensor out = fused ? sdpa(q, k, v, in.mask, p.dropout, train, gen)
                     : sdpa_reference(q, k, v, in.mask, p.dropout, train, gen);
  if (p.backward) backward(out, in.dout);
  return out;
}

// TF32 products keep 10 mantissa bits: outputs to ~1e-3, gradients to ~1e-2 (the tests argue
// the figures, tests/autograd/test_sdpa_cuda.cpp); fp32 and tf32x3 get the fp32 tolerances.
AttentionTolerance tolerance(const Problem& p) {
  if (p.math != SdpaMath::tf32) return {};
  return {2e-3, 1e-2, 2e-2, 5e-2};
}

std::string check_forward(const Problem& p, const Inputs& in) {
  return check_sdpa_forward([&](bool fused) { return run(p, in, fused); }, in.q_cpu, in.k_cpu,
                            in.v_cpu, p.NH, tolerance(p));
}

std::string check_backward(const Problem& p, const Inputs& in) {
  return check_sdpa_backward([&](bool fused) { run(p, in, fused); }, {in.qx, in.kx, in.vx},
                             tolerance(p));
}

// The process-wide attention choices as they were (what --precision chose: runtime/gpu_math.h),
// put back when a benchmark ends, however it ends.
struct KeepAttentionChoices {
  SdpaMath math = sdpa_cuda_math();
  SdpaBackward alg = sdpa_cuda_backward();
  ~KeepAttentionChoices() {
    sdpa_cuda_math() = math;
    sdpa_cuda_backward() = alg;
  }
};

void add_problem(const std::string& name, const Problem& p) {
  add(name, [name, p](benchmark::State& st) {
    const KeepAttentionChoices keep;  // run() sets them for this problem
    const Inputs in = make_inputs(p);
    if (!validate_once(st, name, [&] {
          return p.backward ? check_backward(p, in) : check_forward(p, in);
        }))
      return;
    st.counters["peak_MB"] = peak_alloc_mb(Device::cuda(), [&] { run(p, in, true); });
    st.counters["naive_peak_MB"] = peak_alloc_mb(Device::cuda(), [&] { run(p, in, false); });
    const double naive_s = gpu_time_paired(st, [&] { run(p, in, true); },
                                           {{[&] { run(p, in, false); }, "vs_naive"}})[0];
    set_flops(st, p.flops());
    st.counters["naive_flops"] = naive_s > 0 ? p.flops() * double(st.iterations()) / naive_s : 0;
    const bool fp32_bwd = p.backward && p.math == SdpaMath::fp32;
    st.SetLabel(cat("B=", p.B, " NH=", p.NH, " T=", p.T, " HS=", kHeadSize,
                    p.dropout > 0 ? cat(" p=", p.dropout) : std::string(), " ", math_name(p.math),
                    fp32_bwd ? cat(" bwd=", backward_name(p.alg)) : std::string()));
  }, Timing::manual)->Iterations(kIters);
}

}  // namespace gpu_sdpa_suite

void register_gpu_sdpa() {
  using namespace gpu_sdpa_suite;
  if (!gpu_suite_available("gpu-sdpa")) return;
  for (bool bwd : {false, true}) {
    for (int64_t NH : {kBertConfigs[2].heads, kBertBase.heads}) {
      for (int64_t T : {128, 256, 512}) {
        const Problem p{kBatch, NH, T, bwd, 0.0};
        add_problem(cat("gpu-sdpa/", bwd ? "fwd_bwd" : "fwd", "/NH", NH, "/T", T), p);
      }
    }
  }
  // the fp32 backward's other algorithms (SdpaBackward), beside the default (fused) above:
  // two_kernel is the first version, atomic FlashAttention-2's non-deterministic dQ
  for (SdpaBackward alg : {SdpaBackward::two_kernel, SdpaBackward::atomic})
    for (int64_t NH : {kBertConfigs[2].heads, kBertBase.heads})
      for (int64_t T : {128, 256, 512}) {
        Problem p{kBatch, NH, T, true, 0.0};
        p.alg = alg;
        add_problem(cat("gpu-sdpa/", backward_name(alg), "/fwd_bwd/NH", NH, "/T", T), p);
      }
  add_problem("gpu-sdpa/fwd_bwd_dropout/NH12/T256", Problem{kBatch, 12, 256, true, 0.1});
  // the tensor-core rung (v3): fp32-accurate tf32x3, and plain tf32, at bert-base's heads
  for (SdpaMath math : {SdpaMath::tf32x3, SdpaMath::tf32})
    for (bool bwd : {false, true})
      for (int64_t T : {128, 256, 512})
        add_problem(cat("gpu-sdpa/", math_name(math), "/", bwd ? "fwd_bwd" : "fwd", "/NH12/T", T),
                    Problem{kBatch, 12, T, bwd, 0.0, math});
}

}  // namespace mase::bench
