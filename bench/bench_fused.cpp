// bench/bench_fused.cpp — the fused suite: BERT's fused epilogues next to the compositions
// they replace, and the AdamW step, each timed next to a memcpy of the same bytes.
//
// Shapes are bert-small's at B·T = 8192 token rows (C = 512, I = 2048). Each kernel runs as
// a model runs it — forward, or forward + backward through autograd (inputs require grad,
// backward from a fixed seed gradient) — in two versions:
//   .../fused      the fused op (autograd/ops/gelu.cpp, layer_norm.cpp)
//   .../reference  its composition of primitive ops (what BERT ran before the fusion)
// Both count the same bytes — the least traffic the maths needs, the fused kernel's — so
// vs_memcpy reads as "how close to moving those bytes at memcpy speed", and vs_reference
// (the fused benchmark only: its reference is run after each call, time(reference) /
// time(fused) at the same moments) is what the fusion bought:
//   bias_gelu       fwd: read x, write y (8N);  fwd+bwd: + read dy, x, write dx (20N)
//   add_layer_norm  dropout_add_layer_norm, p = 0.1, training: fwd read x, residual, write y
//                   and hidden (16N); fwd+bwd: + read dy, hidden, write dx, dresidual (32N)
//   layer_norm      fwd 8N, fwd+bwd 20N (read dy, x, write dx)
//   adamw           one step over bert-small's 28,764,674 parameters (vocab 30522) as one
//                   tensor: read p, g, m, v, write p, m,
//                   v (28 bytes a parameter); reference = adamw_step_reference (train/adamw.h)
//   linear_gelu     (--precision bf16 on AMX only) gelu(x·Wᵀ + b) for inference, GELU in the
//                   GEMM's store; reference = bias_gelu(linear(x, W), b); fwd read x, write y
// (the column sums of the backward — dbias, dweight — and the per-row statistics are O(C)
// or O(rows) and not counted.) Validated once: fused and reference outputs, and the gradients
// of the fwd+bwd versions, agree to 1e-5 relative.
//
// Read next: runtime/cpu/gelu.cpp, runtime/cpu/layer_norm.cpp, runtime/cpu/adamw.cpp.
#include <functional>

#include "autograd/ops.h"
#include "bench/common.h"
#include "runtime/kernels/adamw.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"
#include "runtime/random.h"
#include "train/adamw.h"

namespace mase::bench {
namespace fused_suite {

constexpr int64_t kC = 512, kI = 2048;  // bert-small hidden and intermediate sizes

using Op = std::function<Tensor(const Tensors&, bool fused)>;

// Runs op on `in` (fresh gradients); with `bwd`, backward from a fixed seed gradient.
// Returns the output and the gradients, for validation.
Tensors run(const Op& op, const Tensors& in, bool fused, bool bwd) {
  for (const Tensor& t : in) t.set_grad(Tensor());
  Tensor y = op(in, fused);
  if (!bwd) return {y};
  static Tensor seed;
  if (!seed.defined() || seed.shape() != y.shape()) seed = uniform_tensor(y.shape(), 99);
  backward(y, seed);
  Tensors out{y.detach()};
  for (const Tensor& t : in)
    if (t.requires_grad()) out.push_back(t.grad());
  return out;
}

std::string agree(const Tensors& a, const Tensors& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    std::string e = compare(a[i], b[i].to_vector<double>(), 1e-5, 1e-5);
    if (!e.empty()) return cat(i == 0 ? "output: " : cat("gradient ", i, ": "), e);
  }
  return "";
}

void add_pair(const std::string& kernel, const Shape& shape, int64_t bytes_fwd,
              int64_t bytes_bwd, const std::function<Tensors()>& make, const Op& op) {
  for (bool bwd : {false, true}) {
    for (bool fused : {true, false}) {
      const std::string name = cat("fused/", kernel, bwd ? "_fwd_bwd/" : "_fwd/",
                                   shape_name(shape), fused ? "/fused" : "/reference");
      add(name, [=](benchmark::State& st) {
        Tensors in = make();
        if (!validate_once(st, name, [&] { return agree(run(op, in, true, bwd), run(op, in, false, bwd)); }))
          return;
        std::vector<Baseline> also;  // the fused one: its reference after each call, vs_reference
        if (fused)
          also.push_back({[&] {
            Tensors out = run(op, in, false, bwd);
            benchmark::DoNotOptimize(out[0].raw_data());
          }, "vs_reference"});
        time_vs_memcpy(st, bwd ? bytes_fwd + bytes_bwd : bytes_fwd, [&] {
          Tensors out = run(op, in, fused, bwd);
          benchmark::DoNotOptimize(out[0].raw_data());
        }, also);
      }, Timing::manual);
    }
  }
}

// seeded inputs that require grad
Tensor input(const Shape& s, uint64_t seed, double lo = -2, double hi = 2) {
  return uniform_tensor(s, seed, lo, hi).set_requires_grad(true);
}

void add_adamw() {
  const int64_t n = 28'764'674;
  for (bool fused : {true, false}) {
    const std::string name = cat("fused/adamw/", n, fused ? "/fused" : "/reference");
    add(name, [=](benchmark::State& st) {
      Tensor p = uniform_tensor({n}, 1), g = uniform_tensor({n}, 2);
      Tensor m = uniform_tensor({n}, 3, -0.1, 0.1), v = uniform_tensor({n}, 4, 0, 0.01);
      const AdamWScalars s = train::adamw_scalars({}, 1e-3, 0.01, 10);
      auto step = [&](const Tensor& pp, const Tensor& mm, const Tensor& vv, bool f) {
        if (f) cpu::adamw_step<float>(pp.data<float>(), mm.data<float>(), vv.data<float>(),
                                      g.data<float>(), s, n);
        else train::adamw_step_reference(pp, mm, vv, g, s);
      };
      if (!validate_once(st, name, [&] {
            Tensor p1 = p.clone(), m1 = m.clone(), v1 = v.clone();
            Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
            step(p1, m1, v1, true);
            step(p2, m2, v2, false);
            return agree({p1, m1, v1}, {p2, m2, v2});
          }))
        return;
      std::vector<Baseline> also;
      if (fused) also.push_back({[&] { step(p, m, v, false); }, "vs_reference"});
      time_vs_memcpy(st, 28 * n, [&] { step(p, m, v, fused); }, also);
    }, Timing::manual);
  }
}

// BERT's FFN first half for inference under --precision bf16 on AMX: linear_gelu (GELU applied
// as the GEMM stores each block, autograd/ops/matmul.cpp) against bias_gelu(linear(x, W), b)
// (the GEMM writes y, then a pass reads and rewrites it). Bytes: read x, write y (the fused
// kernel's least traffic); the weight's are small. Elsewhere linear_gelu is the composition
// itself: skipped, saying so.
void add_linear_gelu() {
  for (bool fused : {true, false}) {
    const std::string name = cat("fused/linear_gelu_fwd/", shape_name({kTokens, kC}), "x", kI,
                                 fused ? "/fused" : "/reference");
    add(name, [=](benchmark::State& st) {
      if (!(cpu_gemm_precision() == GemmPrecision::bf16 && cpu::amx_bf16_active())) {
        st.SkipWithError("needs --precision bf16 on a CPU with AMX-BF16 (elsewhere linear_gelu is "
                         "the composition it would be timed against)");
        return;
      }
      NoGradGuard ng;
      const Tensor x = uniform_tensor({kTokens, kC}, 1), w = uniform_tensor({kI, kC}, 2, -0.1, 0.1);
      const Tensor b = uniform_tensor({kI}, 3);
      auto op = [&](bool f) { return f ? linear_gelu(x, w, b) : bias_gelu(linear(x, w), b); };
      if (!validate_once(st, name, [&] { return agree({op(true)}, {op(false)}); })) return;
      std::vector<Baseline> also;
      if (fused) also.push_back({[&] { benchmark::DoNotOptimize(op(false).raw_data()); }, "vs_reference"});
      time_vs_memcpy(st, 4 * kTokens * (kC + kI), [&] { benchmark::DoNotOptimize(op(fused).raw_data()); }, also);
    }, Timing::manual);
  }
}

}  // namespace fused_suite

void register_fused() {
  using namespace fused_suite;
  const int64_t R = kTokens;
  {
    const Shape s{R, kI};
    const int64_t N = R * kI;
    add_pair("bias_gelu", s, 8 * N, 12 * N,
             [s] { return Tensors{input(s, 1, -4, 4), input({kI}, 2, -1, 1)}; },
             [](const Tensors& t, bool fused) {
               return fused ? bias_gelu(t[0], t[1]) : bias_gelu_reference(t[0], t[1]);
             });
  }
  const Shape s{R, kC};
  const int64_t N = R * kC;
  add_pair("add_layer_norm", s, 16 * N, 16 * N,
           [s] {
             return Tensors{input(s, 1), input({kC}, 2, -1, 1), input(s, 3), input({kC}, 4, 0.5, 1.5),
                            input({kC}, 5, -1, 1)};
           },
           [](const Tensors& t, bool fused) {
             Generator gen(7);  // the same mask on both sides
             return fused ? dropout_add_layer_norm(t[0], t[1], t[2], t[3], t[4], 0.1, true, 1e-12, gen)
                          : dropout_add_layer_norm_reference(t[0], t[1], t[2], t[3], t[4], 0.1,
                                                             true, 1e-12, gen);
           });
  add_pair("layer_norm", s, 8 * N, 12 * N,
           [s] { return Tensors{input(s, 1), input({kC}, 2, 0.5, 1.5), input({kC}, 3, -1, 1)}; },
           [](const Tensors& t, bool fused) {
             auto f = fused ? layer_norm : layer_norm_reference;
             return f(t[0], t[1], t[2], 1e-12);
           });
  add_linear_gelu();
  add_adamw();
}

}  // namespace mase::bench
