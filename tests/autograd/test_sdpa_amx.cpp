// tests/autograd/test_sdpa_amx.cpp — the fused attention under --precision bf16 on a CPU with
// bf16 units (runtime/cpu/sdpa_amx.h): the forward's two products and the backward's five take
// bf16 operands there, so its output and gradients must agree with the fp32 reference to
// bf16's precision (operands of 8 significant bits: ~1% here) and not to fp32's — which also
// shows the bf16 products ran, forward and backward. Each case runs on every path the CPU has:
// AMX-BF16 tiles, and vdpbf16ps on the same packs (AMX switched off: what an AMD Zen 4/5 runs).
// Ragged tiles, head widths that are not a multiple of 32, padding masks with fully padded rows,
// dropout and BERT's head-split views; --bf16-attention off keeps the products fp32. *Skipped*
// on CPUs with neither AMX-BF16 nor AVX512-BF16.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/cpu/sdpa_amx.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

using namespace mase;
using mase::test::random_tensor;

namespace {

// The largest |a − b| over every element.
double max_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

struct Run {
  Tensor out;
  Tensors grads;
};

// sdpa (fused: the AMX tiles under bf16) or sdpa_reference (the composition of ops: its GEMMs
// round the same operands under bf16) at a precision, with a backward from the same dout; each
// from Generator(seed) so that dropout drops the same entries
Run attend(bool fused, GemmPrecision precision, const Tensors& inputs, const Tensor& mask,
           double p) {
  Tensors in;
  for (const Tensor& x : inputs) in.push_back(x.clone().set_requires_grad(true));
  Generator gen(7);
  set_cpu_gemm_precision(precision);
  Run r;
  r.out = fused ? sdpa(in[0], in[1], in[2], mask, p, true, gen)
                : sdpa_reference(in[0], in[1], in[2], mask, p, true, gen);
  backward(r.out, random_tensor(r.out.shape(), 99, -1, 1, r.out.dtype()));
  set_cpu_gemm_precision(GemmPrecision::fp32);
  for (const Tensor& x : in) r.grads.push_back(x.grad());
  return r;
}

// bf16-close and not fp32-close: the output within atol of the fp32 reference yet different
// from it (the products rounded), every gradient within 4·atol, and dV as the composition's
// bf16 GEMMs give it
void check_bf16(const Tensors& inputs, const Tensor& mask, double p, double atol) {
  const Run got = attend(true, GemmPrecision::bf16, inputs, mask, p);
  const Run want = attend(false, GemmPrecision::fp32, inputs, mask, p);
  const Run naive = attend(false, GemmPrecision::bf16, inputs, mask, p);
  const double d = max_diff(got.out, want.out);
  INFO("output max |difference| ", d);
  CHECK(d < atol);
  CHECK(d > 1e-5);
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input ", i);
    CHECK(max_diff(got.grads[i], want.grads[i]) < 4 * atol);
  }
  // dV = (z∘P)ᵀ·dO: the backward's tiles round P and dO as the composition's bf16 GEMM does,
  // so the two agree to fp32 reassociation (measured ≤ 6e-8) while fp32's differs by ~1e-3 —
  // what the backward's products in fp32 (before 2026-11-30) would have given
  const double dv_naive = max_diff(got.grads[2], naive.grads[2]);
  INFO("dV: fused bf16 against the bf16 composition ", dv_naive);
  CHECK(dv_naive < 1e-5);
  CHECK(max_diff(got.grads[2], want.grads[2]) > 1e-4);
}

// `check` on each bf16 path of this CPU: AMX-BF16 tiles, then vdpbf16ps on the same packs (AMX
// switched off); false (the case skips) where it has neither
template <class F>
bool on_each_bf16_path(F&& check) {
  const bool amx = cpu::amx_bf16_available();
  const bool dp = cpu::bf16_isa_supported(cpu::Bf16Isa::avx512_bf16);
  if (amx) {
    INFO("on AMX-BF16 tiles");
    check();
  }
  if (dp) {
    struct AmxOff {
      AmxOff() { cpu::set_amx_bf16_enabled(false); }
      ~AmxOff() { cpu::set_amx_bf16_enabled(true); }
    } off;
    INFO("with vdpbf16ps (AMX off)");
    check();
  }
  return amx || dp;
}

constexpr const char* kNoBf16 = "this CPU has neither AMX-BF16 nor AVX512-BF16";

Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<double> m;
  for (int64_t len : lengths)
    for (int64_t j = 0; j < T; ++j) m.push_back(j < len ? 0.0 : std::numeric_limits<float>::lowest());
  return Tensor::from(m, {static_cast<int64_t>(lengths.size()), 1, 1, T}).to(DType::f32);
}

}  // namespace

TEST_CASE("sdpa amx: bf16 products across ragged tiles and head widths") {
  const bool ran = on_each_bf16_path([] {
    // Tq 131 = 2·64 + 3 queries, Tk 259 = 2·128 + 3 keys, HS 64
    check_bf16({random_tensor({2, 2, 131, 64}, 1, -2, 2, DType::f32),
                random_tensor({2, 2, 259, 64}, 2, -2, 2, DType::f32),
                random_tensor({2, 2, 259, 64}, 3, -1, 1, DType::f32)}, Tensor(), 0.0, 3e-2);
    // HS 40 and HSv 24 (padded to 64 and 32 in the tiles), one query, Tk 33
    check_bf16({random_tensor({1, 3, 1, 40}, 4, -2, 2, DType::f32),
                random_tensor({1, 3, 33, 40}, 5, -2, 2, DType::f32),
                random_tensor({1, 3, 33, 24}, 6, -1, 1, DType::f32)}, Tensor(), 0.0, 3e-2);
  });
  if (!ran) test::skip(kNoBf16);
}

TEST_CASE("sdpa amx: padding masks, fully padded rows and dropout") {
  const Tensors qkv = {random_tensor({3, 2, 70, 64}, 7, -2, 2, DType::f32),
                       random_tensor({3, 2, 70, 64}, 8, -2, 2, DType::f32),
                       random_tensor({3, 2, 70, 64}, 9, -1, 1, DType::f32)};
  const bool ran = on_each_bf16_path([&] {
    check_bf16(qkv, padding_mask({70, 33, 0}, 70), 0.0, 3e-2);  // batch 2 attends to nothing
    check_bf16(qkv, padding_mask({70, 40, 5}, 70), 0.2, 3e-2);
  });
  if (!ran) test::skip(kNoBf16);
}

TEST_CASE("sdpa amx: --bf16-attention off keeps the products fp32 under bf16") {
  if (!cpu::bf16_isa_supported(cpu::Bf16Isa::avx512_bf16)) return test::skip(kNoBf16);
  const Tensors qkv = {random_tensor({2, 2, 70, 64}, 12, -2, 2, DType::f32),
                       random_tensor({2, 2, 70, 64}, 13, -2, 2, DType::f32),
                       random_tensor({2, 2, 70, 64}, 14, -1, 1, DType::f32)};
  const Run fp32 = attend(true, GemmPrecision::fp32, qkv, Tensor(), 0.0);
  cpu::set_bf16_attention_enabled(false);
  const Run off = attend(true, GemmPrecision::bf16, qkv, Tensor(), 0.0);
  cpu::set_bf16_attention_enabled(true);
  const Run on = attend(true, GemmPrecision::bf16, qkv, Tensor(), 0.0);
  CHECK(max_diff(off.out, fp32.out) == 0.0);
  for (size_t i = 0; i < 3; ++i) CHECK(max_diff(off.grads[i], fp32.grads[i]) == 0.0);
  CHECK(max_diff(on.out, fp32.out) > 1e-5);
}

TEST_CASE("sdpa amx: BERT's head-split views of a fused QKV projection") {
  const bool ran = on_each_bf16_path([] {
    const int64_t B = 2, T = 150, NH = 4, HS = 64, C = NH * HS;
    Tensor x = random_tensor({B, T, 3 * C}, 10, -2, 2, DType::f32);
    Tensor x5 = view(x, {B, T, 3, NH, HS});
    Tensors qkv;
    for (int64_t i = 0; i < 3; ++i) qkv.push_back(contiguous(transpose(select(x5, 2, i), 1, 2)));
    const Tensor out_views = [&] {
      set_cpu_gemm_precision(GemmPrecision::bf16);
      Generator gen(1);
      Tensor o = sdpa(transpose(select(x5, 2, 0), 1, 2), transpose(select(x5, 2, 1), 1, 2),
                      transpose(select(x5, 2, 2), 1, 2), Tensor(), 0.0, false, gen);
      set_cpu_gemm_precision(GemmPrecision::fp32);
      return o;
    }();
    set_cpu_gemm_precision(GemmPrecision::bf16);
    Generator gen(1);
    const Tensor out_packed = sdpa(qkv[0], qkv[1], qkv[2], Tensor(), 0.0, false, gen);
    set_cpu_gemm_precision(GemmPrecision::fp32);
    CHECK(max_diff(out_views, out_packed) == 0.0);  // the same roundings, the same sums
    check_bf16(qkv, Tensor(), 0.0, 3e-2);
    // the backward reads the views' strides as well: x's gradient through the views equals the
    // one through contiguous copies, bit for bit
    auto dx = [&](bool views) {
      Tensor xg = x.clone().set_requires_grad(true);
      Tensor xg5 = view(xg, {B, T, 3, NH, HS});
      Tensors h;
      for (int64_t i = 0; i < 3; ++i) {
        Tensor t = transpose(select(xg5, 2, i), 1, 2);
        h.push_back(views ? t : contiguous(t));
      }
      set_cpu_gemm_precision(GemmPrecision::bf16);
      Generator g(1);
      Tensor o = sdpa(h[0], h[1], h[2], Tensor(), 0.1, true, g);
      backward(o, random_tensor(o.shape(), 11, -1, 1, DType::f32));
      set_cpu_gemm_precision(GemmPrecision::fp32);
      return xg.grad();
    };
    CHECK(max_diff(dx(true), dx(false)) == 0.0);
  });
  if (!ran) test::skip(kNoBf16);
}
