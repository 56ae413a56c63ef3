// tests/autograd/test_sdpa_cuda.cpp — the CUDA flash attention (cuda/sdpa_forward.cu,
// cuda/sdpa_backward*.cu) against the CPU kernel and against CUDA sdpa_reference: values and
// every gradient, head sizes 32/64/128, odd T (1, 7, 129, 300: ragged 64-row tiles), Tq != Tk,
// head-split (strided) views, padding masks with fully padded rows (finfo.min and −inf),
// other mask shapes, dropout (both devices must drop the same entries), the three fp32
// backwards (SdpaBackward: fused, atomic, two_kernel), determinism (fused and two_kernel),
// memory that does not grow with T², the tensor-core kernels (SdpaMath::tf32x3 and ::tf32),
// and the head sizes that fall back to the reference. Every case skips visibly without a GPU
// (test::have_gpu).
//
// Tolerances. Both sides are f32; they differ in exp (CPU polynomial vs CUDA __expf, whose
// error grows as |x|·2⁻²², i.e. ≤ ~5e-6 relative on the probabilities that matter, those
// with x = s − m > −20), in tile shapes (CPU 64 × 128, CUDA 64 × 64: another order of the
// online rescales) and in summation order. Outputs are convex combinations of v ∈ [−1, 1]:
// 2e-5 absolute + 1e-4 relative is ~100 ulps of 1, far below what any indexing or masking
// error gives (O(0.01 .. 1)). Gradients add up to Tq = 300 rows of products of magnitude
// ≤ ~4: 1e-4 absolute + 1e-3 relative (the order-of-summation noise of such sums is ~1e-5).
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/allocator.h"
#include "runtime/kernels/sdpa.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

namespace test_sdpa_cuda {

namespace {

constexpr double kOutAtol = 2e-5, kOutRtol = 1e-4;
constexpr double kGradAtol = 1e-4, kGradRtol = 1e-3;
constexpr double kLowest = std::numeric_limits<float>::lowest();  // HF's finfo(f32).min
constexpr double kInf = std::numeric_limits<double>::infinity();

using Attention = std::function<Tensor(const Tensors&, Generator&)>;

struct Result {
  Tensor out;
  Tensors grads;
};

// f on fresh leaf copies of `inputs` on `device`, then a backward from the same seeded dout.
Result run_on(const Attention& f, const Tensors& inputs, Device device, uint64_t seed = 7) {
  Tensors in;
  for (const Tensor& x : inputs) {
    Tensor t = x.detach().to(device).clone();
    in.push_back(t.set_requires_grad(true));
  }
  Generator gen(seed);
  Result r;
  r.out = f(in, gen);
  backward(r.out, random_tensor(r.out.shape(), 99, -1, 1, DType::f32).detach().to(device));
  for (const Tensor& x : in) r.grads.push_back(x.grad().detach().to(Device::cpu()));
  r.out = r.out.detach().to(Device::cpu());
  return r;
}

struct Tolerances {
  double out_atol = kOutAtol, out_rtol = kOutRtol, grad_atol = kGradAtol, grad_rtol = kGradRtol;
};

void check_results(const Result& got, const Result& want, const Tolerances& tol = {}) {
  check_close(got.out, want.out, tol.out_atol, tol.out_rtol);
  for (size_t i = 0; i < want.grads.size(); ++i) {
    INFO("gradient of input " << i);
    check_close(got.grads[i], want.grads[i], tol.grad_atol, tol.grad_rtol);
  }
}

// f on the CPU and on the GPU: outputs and every input's gradient agree.
void check_cpu_cuda(const Attention& f, const Tensors& inputs, const Tolerances& tol = {}) {
  check_results(run_on(f, inputs, Device::cuda()), run_on(f, inputs, Device::cpu()), tol);
}

// Sets the process-wide CUDA attention arithmetic for the life of the object.
struct UseMath {
  SdpaMath was = sdpa_cuda_math();
  explicit UseMath(SdpaMath m) { sdpa_cuda_math() = m; }
  ~UseMath() { sdpa_cuda_math() = was; }
};

// The same for the backward's algorithm (SdpaBackward: fused, atomic, two_kernel).
struct UseBackward {
  SdpaBackward was = sdpa_cuda_backward();
  explicit UseBackward(SdpaBackward b) { sdpa_cuda_backward() = b; }
  ~UseBackward() { sdpa_cuda_backward() = was; }
};

const char* backward_name(SdpaBackward b) {
  return b == SdpaBackward::fused ? "fused" : b == SdpaBackward::atomic ? "atomic" : "two_kernel";
}
constexpr SdpaBackward kBackwards[] = {SdpaBackward::fused, SdpaBackward::atomic,
                                       SdpaBackward::two_kernel};

// G, the groups of key tiles the fused backward splits each head into on this GPU (from the
// size of its workspace: B·NH·Tq + (G − 1)·B·NH·Tq·HS floats).
int64_t fused_groups(const SdpaSizes& n) {
  const int64_t D = n.B * n.NH * n.Tq;
  return (cuda::sdpa_backward_workspace(n, SdpaMath::fp32, SdpaBackward::fused) - D) /
             (D * n.HS) + 1;
}

// (B, T, 3·C) -> q, k, v as (B, NH, T, HS) views with row stride 3·C (BERT's fused QKV).
Tensors split_qkv(const Tensor& x, int64_t NH) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2) / 3;
  Tensor x5 = view(x, {B, T, 3, NH, C / NH});
  return {transpose(select(x5, 2, 0), 1, 2), transpose(select(x5, 2, 1), 1, 2),
          transpose(select(x5, 2, 2), 1, 2)};
}

// A (B, 1, 1, T) additive padding mask: batch b keeps its first lengths[b] keys.
Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t T, double hidden) {
  std::vector<double> m;
  for (int64_t len : lengths)
    for (int64_t j = 0; j < T; ++j) m.push_back(j < len ? 0.0 : hidden);
  return Tensor::from(m, {static_cast<int64_t>(lengths.size()), 1, 1, T}).to(DType::f32);
}

Tensor attend(const Tensors& x, const Tensor& mask, double p, Generator& g) {
  return sdpa(x[0], x[1], x[2], mask.defined() ? mask.to(x[0].device()) : mask, p, true, g);
}

}  // namespace

TEST_CASE("sdpa CUDA: CPU == CUDA for head sizes 32 64 128 and odd T") {
  if (!test::have_gpu()) return;
  struct Case { int64_t B, NH, Tq, Tk; };
  const Case cases[] = {{1, 1, 1, 1}, {2, 3, 7, 7}, {1, 2, 129, 129}, {2, 1, 300, 300},
                        {1, 2, 70, 131}, {1, 1, 5, 64}};
  for (int64_t HS : {32, 64, 128}) {
    for (const Case& c : cases) {
      INFO("HS " << HS << ", B " << c.B << ", NH " << c.NH << ", Tq " << c.Tq << ", Tk " << c.Tk);
      Tensor q = random_tensor({c.B, c.NH, c.Tq, HS}, 1, -2, 2, DType::f32);
      Tensor k = random_tensor({c.B, c.NH, c.Tk, HS}, 2, -2, 2, DType::f32);
      Tensor v = random_tensor({c.B, c.NH, c.Tk, HS}, 3, -1, 1, DType::f32);
      check_cpu_cuda([](const Tensors& x, Generator& g) { return attend(x, Tensor(), 0.0, g); },
                     {q, k, v});
    }
  }
}

TEST_CASE("sdpa CUDA: head-split views and padding masks with fully padded rows") {
  if (!test::have_gpu()) return;
  // BERT's layout: q, k, v strided views of one (B, T, 3·C); batch 1 is all padding.
  for (int64_t HS : {32, 64, 128}) {
    const int64_t NH = 2, T = 129;
    Tensor x = random_tensor({3, T, 3 * NH * HS}, 1, -2, 2, DType::f32);
    for (double hidden : {kLowest, -kInf}) {
      INFO("HS " << HS << ", mask value " << hidden);
      Tensor mask = padding_mask({100, 0, T}, T, hidden);
      check_cpu_cuda([&](const Tensors& in, Generator& g) {
        return attend(split_qkv(in[0], NH), mask, 0.0, g);
      }, {x});
    }
  }
  // −inf everywhere in batch 1: its output rows and its gradients are exactly 0, no NaN
  Tensor x = random_tensor({3, 67, 3 * 64}, 2, -2, 2, DType::f32).detach().to(Device::cuda());
  x.set_requires_grad(true);
  Tensors qkv = split_qkv(x, 1);
  Tensor out = sdpa(qkv[0], qkv[1], qkv[2], padding_mask({60, 0, 67}, 67, -kInf).detach().to(Device::cuda()),
                    0.0, false);
  backward(sum(out));
  for (double g : x.grad().to_vector<double>()) REQUIRE(std::isfinite(g));
  check_close(select(out, 0, 1).detach().to(Device::cpu()), std::vector<double>(67 * 64, 0.0), 0, 0);
  check_close(select(x.grad(), 0, 1).detach().to(Device::cpu()), std::vector<double>(67 * 192, 0.0), 0, 0);
}

TEST_CASE("sdpa CUDA: other mask shapes broadcast as on the CPU") {
  if (!test::have_gpu()) return;
  Tensor q = random_tensor({2, 2, 9, 32}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({2, 2, 70, 32}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({2, 2, 70, 32}, 3, -1, 1, DType::f32);
  const Shape shapes[] = {{2, 2, 9, 70}, {2, 1, 9, 70}, {70}, {2, 1, 9, 1}};
  for (const Shape& s : shapes) {
    INFO("mask shape " << s);
    Tensor mask = random_tensor(s, 4, -3, 0, DType::f32);
    check_cpu_cuda([&](const Tensors& x, Generator& g) { return attend(x, mask, 0.0, g); },
                   {q, k, v});
  }
}

TEST_CASE("sdpa CUDA: dropout drops the entries the CPU drops") {
  if (!test::have_gpu()) return;
  // If a single kept/dropped decision differed, that output row would move by O(0.1): far
  // beyond the tolerances. p = 0.5 doubles every kept probability, so errors double too.
  const int64_t NH = 2, HS = 64, T = 150;
  Tensor x = random_tensor({2, T, 3 * NH * HS}, 1, -2, 2, DType::f32);
  Tensor mask = padding_mask({T, 97}, T, kLowest);
  for (double p : {0.1, 0.5}) {
    INFO("p = " << p);
    check_cpu_cuda([&](const Tensors& in, Generator& g) {
      return attend(split_qkv(in[0], NH), mask, p, g);
    }, {x});
  }
}

TEST_CASE("sdpa CUDA: the fused kernel equals CUDA sdpa_reference") {
  if (!test::have_gpu()) return;
  // both on the GPU: the composition (cuBLAS, softmax, dropout kernels) is the oracle
  const int64_t NH = 3, HS = 64, T = 129;
  Tensor x = random_tensor({2, T, 3 * NH * HS}, 5, -2, 2, DType::f32);
  Tensor mask = padding_mask({T, 50}, T, kLowest);
  for (double p : {0.0, 0.1}) {
    INFO("p = " << p);
    auto run = [&](bool fused) {
      return run_on([&](const Tensors& in, Generator& g) {
        Tensors qkv = split_qkv(in[0], NH);
        Tensor m = mask.detach().to(Device::cuda());
        return fused ? sdpa(qkv[0], qkv[1], qkv[2], m, p, true, g)
                     : sdpa_reference(qkv[0], qkv[1], qkv[2], m, p, true, g);
      }, {x}, Device::cuda());
    };
    check_results(run(true), run(false));
  }
}

TEST_CASE("sdpa CUDA: every backward variant equals the CPU - odd T and padding and dropout") {
  if (!test::have_gpu()) return;
  // fused (the default), atomic and two_kernel compute the same maths in different orders.
  // The shapes give the fused kernel both one group of key tiles a head (B·NH = 264 heads
  // fill an H100's 132 SMs × 2 blocks: G = 1, each block walks every key tile) and several
  // (a few heads: G up to 4, partial dQ sums added at the end).
  struct Case { int64_t B, NH, Tq, Tk; };
  const Case cases[] = {{1, 1, 1, 1}, {2, 3, 7, 7}, {2, 1, 300, 300}, {1, 2, 70, 131},
                        {66, 4, 129, 129}};
  for (SdpaBackward alg : kBackwards) {
    UseBackward use(alg);
    for (int64_t HS : {32, 64, 128}) {
      for (const Case& c : cases) {
        if (c.B * c.NH > 8 && HS != 64) continue;  // the many-heads case once
        const SdpaSizes n{c.B, c.NH, c.Tq, c.Tk, HS, HS};
        INFO(backward_name(alg) << " (fused G " << fused_groups(n) << "), HS " << HS << ", B "
                                << c.B << ", NH " << c.NH << ", Tq " << c.Tq << ", Tk " << c.Tk);
        Tensor q = random_tensor({c.B, c.NH, c.Tq, HS}, 1, -2, 2, DType::f32);
        Tensor k = random_tensor({c.B, c.NH, c.Tk, HS}, 2, -2, 2, DType::f32);
        Tensor v = random_tensor({c.B, c.NH, c.Tk, HS}, 3, -1, 1, DType::f32);
        std::vector<int64_t> lengths(c.B, c.Tk);
        lengths[0] = c.Tk / 2;  // batch 0 padded (fully, when Tk = 1)
        Tensor mask = padding_mask(lengths, c.Tk, c.B > 1 ? -kInf : kLowest);
        check_cpu_cuda([&](const Tensors& x, Generator& g) { return attend(x, mask, 0.1, g); },
                       {q, k, v});
      }
    }
  }
}

TEST_CASE("sdpa CUDA: gradients are the same bits on every run (fused and two_kernel)") {
  if (!test::have_gpu()) return;
  // fused: each dQ partial sum belongs to one block, the groups' sums are added in a fixed
  // order; two_kernel: every gradient element is summed by one thread. No atomics in either.
  // atomic: only close (its dq's last bits may differ from run to run).
  Tensor q = random_tensor({2, 2, 200, 64}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({2, 2, 200, 64}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({2, 2, 200, 64}, 3, -1, 1, DType::f32);
  Attention f = [](const Tensors& x, Generator& g) { return attend(x, Tensor(), 0.1, g); };
  for (SdpaBackward alg : kBackwards) {
    INFO(backward_name(alg));
    UseBackward use(alg);
    Result a = run_on(f, {q, k, v}, Device::cuda()), b = run_on(f, {q, k, v}, Device::cuda());
    check_close(a.out, b.out, 0, 0);
    const double tol = alg == SdpaBackward::atomic ? 1e-5 : 0.0;
    for (size_t i = 0; i < 3; ++i) check_close(a.grads[i], b.grads[i], tol, tol);
  }
}

TEST_CASE("sdpa CUDA: peak memory does not grow with T squared") {
  if (!test::have_gpu()) return;
  // One head: the (T, T) scores would be 16 MB at T = 2048; everything the fused forward and
  // backward allocate (out, stats, D, dq, dk, dv, the seed dout, and the fused backward's
  // partial dQ sums: up to 3 more (T, HS)) is ~4.5 MB, and doubles when T doubles.
  const int64_t HS = 64;
  const Device dev = Device::cuda();
  auto peak_at = [&](int64_t T) {
    Tensor q = random_tensor({1, 1, T, HS}, 1, -1, 1, DType::f32).detach().to(dev);
    Tensor k = random_tensor({1, 1, T, HS}, 2, -1, 1, DType::f32).detach().to(dev);
    Tensor v = random_tensor({1, 1, T, HS}, 3, -1, 1, DType::f32).detach().to(dev);
    q.set_requires_grad(true);
    const size_t before = allocator_stats(dev).in_use_bytes;
    reset_peak_stats(dev);
    Tensor out = sdpa(q, k, v, Tensor(), 0.1, true);
    backward(out, Tensor::ones(out.shape(), DType::f32, dev));
    return allocator_stats(dev).peak_in_use_bytes - before;
  };
  for (SdpaBackward alg : kBackwards) {
    UseBackward use(alg);
    const size_t p1 = peak_at(1024), p2 = peak_at(2048);
    INFO(backward_name(alg) << ": peak " << p1 << " bytes at T 1024, " << p2 << " at T 2048");
    CHECK(p2 < size_t(2048) * 2048 * 4 / 2);  // half the scores
    CHECK(p2 < 3 * p1);                       // 2× for memory in T, 4× for T²
  }
}

TEST_CASE("sdpa CUDA: tensor cores - tf32x3 at fp32 accuracy and tf32 at its own") {
  if (!test::have_gpu()) return;
  // tf32x3 splits each operand into two TF32 parts (~21 bits): the fp32 tolerances hold.
  // tf32 keeps 10 mantissa bits: each product q_d·k_d is off by up to ~2·2⁻¹¹ relative, so a
  // score (64 products of |q·k| ≤ 2, random signs, times 1/8) by ~1e-3 and P by as much
  // relatively; outputs (≤ 1) to 2e-3 + 1e-2 relative, gradients (sums over 129 rows) to
  // 2e-2 + 5e-2 relative — loose, but an indexing or masking error is O(0.1 .. 1).
  const Tolerances tf32{2e-3, 1e-2, 2e-2, 5e-2};
  for (SdpaMath math : {SdpaMath::tf32x3, SdpaMath::tf32}) {
    UseMath use(math);
    const Tolerances tol = math == SdpaMath::tf32 ? tf32 : Tolerances{};
    for (int64_t HS : {32, 64, 128}) {
      INFO("math " << int(math) << ", HS " << HS);
      const int64_t NH = 2, T = 129;
      Tensor x = random_tensor({2, T, 3 * NH * HS}, 1, -2, 2, DType::f32);
      Tensor mask = padding_mask({100, 0}, T, kLowest);
      check_cpu_cuda([&](const Tensors& in, Generator& g) {
        return attend(split_qkv(in[0], NH), mask, 0.1, g);
      }, {x}, tol);
      Tensor q = random_tensor({1, 2, 5, HS}, 2, -2, 2, DType::f32);  // Tq < Tk, −inf padding
      Tensor k = random_tensor({1, 2, 131, HS}, 3, -2, 2, DType::f32);
      Tensor v = random_tensor({1, 2, 131, HS}, 4, -1, 1, DType::f32);
      Tensor m2 = padding_mask({100}, 131, -kInf);
      check_cpu_cuda([&](const Tensors& in, Generator& g) { return attend(in, m2, 0.0, g); },
                     {q, k, v}, tol);
    }
  }
}

TEST_CASE("sdpa CUDA: head sizes without a kernel take the reference on the GPU") {
  if (!test::have_gpu()) return;
  // HS = 16 and HSv != HS: not compiled, so sdpa runs the composition — still CPU == CUDA
  Tensor q = random_tensor({1, 2, 9, 16}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({1, 2, 11, 16}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({1, 2, 11, 16}, 3, -1, 1, DType::f32);
  Tensor v8 = random_tensor({1, 2, 11, 8}, 4, -1, 1, DType::f32);
  Attention f = [](const Tensors& x, Generator& g) { return attend(x, Tensor(), 0.0, g); };
  check_cpu_cuda(f, {q, k, v});
  check_cpu_cuda(f, {q, k, v8});
}

}  // namespace test_sdpa_cuda
