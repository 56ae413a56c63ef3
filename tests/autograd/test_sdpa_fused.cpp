// tests/autograd/test_sdpa_fused.cpp — the fused CPU attention (sdpa, runtime/cpu/sdpa.cpp)
// against its oracle sdpa_reference (matmul, softmax, dropout: each op tested on its own):
// values and every gradient, over several tiles with ragged ends (the kernel tiles 64 queries
// × 128 keys), padding masks with fully padded rows, dropout, strided inputs, the output
// layout, and independence from the thread count. Hand-checked values, gradcheck and errors
// are in test_sdpa.cpp.
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/parallel.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

namespace test_sdpa_fused {

namespace {

using Attention = std::function<Tensor(const Tensors&, Generator&)>;

// Runs `f` once with sdpa and once with sdpa_reference (each from Generator(seed)), on fresh
// leaf copies of `inputs`, and checks the outputs and, after a backward from the same random
// dout, the gradient of every input.
void check_fused(const std::function<Tensor(const Tensors&, bool fused, Generator&)>& f,
                 const Tensors& inputs, double atol, double rtol, uint64_t seed = 7) {
  Tensors grads[2];
  Tensor outs[2];
  for (int fused = 0; fused < 2; ++fused) {
    Tensors in;
    for (const Tensor& x : inputs) in.push_back(x.clone().set_requires_grad(true));
    Generator gen(seed);
    outs[fused] = f(in, fused == 1, gen);
    backward(outs[fused], random_tensor(outs[fused].shape(), 99, -1, 1, outs[fused].dtype()));
    for (const Tensor& x : in) grads[fused].push_back(x.grad());
  }
  check_close(outs[1], outs[0], atol, rtol);
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input " << i);
    check_close(grads[1][i], grads[0][i], atol, rtol);
  }
}

Tensor attend(bool fused, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              double p, Generator& gen) {
  return fused ? sdpa(q, k, v, mask, p, true, gen) : sdpa_reference(q, k, v, mask, p, true, gen);
}

// (B, T, 3·C) -> q, k, v as (B, NH, T, HS) views with row stride 3·C (BERT's fused QKV).
Tensors split_qkv(const Tensor& x, int64_t NH) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2) / 3;
  Tensor x5 = view(x, {B, T, 3, NH, C / NH});
  return {transpose(select(x5, 2, 0), 1, 2), transpose(select(x5, 2, 1), 1, 2),
          transpose(select(x5, 2, 2), 1, 2)};
}

// A (B, 1, 1, T) additive padding mask: batch b keeps its first lengths[b] keys.
Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t T, double hidden, DType dtype) {
  std::vector<double> m;
  for (int64_t len : lengths)
    for (int64_t j = 0; j < T; ++j) m.push_back(j < len ? 0.0 : hidden);
  return Tensor::from(m, {static_cast<int64_t>(lengths.size()), 1, 1, T}).to(dtype);
}

constexpr double kLowest = std::numeric_limits<float>::lowest();  // HF's finfo(f32).min
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("sdpa fused: equals the reference across tiles with ragged ends") {
  // Tq = 131 = 2·64 + 3 query rows, Tk = 259 = 2·128 + 3 keys, HS = 64: every tile boundary
  // and a ragged last tile on both sides; values in [-2, 2] so the scores spread out
  Tensor q = random_tensor({2, 2, 131, 64}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({2, 2, 259, 64}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({2, 2, 259, 64}, 3, -1, 1, DType::f32);
  check_fused([](const Tensors& x, bool fused, Generator& g) {
    return attend(fused, x[0], x[1], x[2], Tensor(), 0.0, g);
  }, {q, k, v}, 2e-6, 1e-4);
  // odd head widths, Tq < Tk inside one tile, HSv != HS
  Tensor q2 = random_tensor({1, 3, 5, 7}, 4, -2, 2, DType::f32);
  Tensor k2 = random_tensor({1, 3, 9, 7}, 5, -2, 2, DType::f32);
  Tensor v2 = random_tensor({1, 3, 9, 3}, 6, -1, 1, DType::f32);
  check_fused([](const Tensors& x, bool fused, Generator& g) {
    return attend(fused, x[0], x[1], x[2], Tensor(), 0.0, g);
  }, {q2, k2, v2}, 2e-6, 1e-4);
}

TEST_CASE("sdpa fused: f64 gradients equal the reference to rounding") {
  // In f64 the two differ only by rounding (~1e-15), so a wrong term anywhere — a tile's
  // rescale, a ragged edge, a missing D — shows far above the tolerance.
  Tensor q = random_tensor({1, 2, 70, 16}, 1, -3, 3);
  Tensor k = random_tensor({1, 2, 135, 16}, 2, -3, 3);
  Tensor v = random_tensor({1, 2, 135, 16}, 3);
  Tensor mask = padding_mask({100}, 135, -1e9, DType::f64);
  check_fused([&](const Tensors& x, bool fused, Generator& g) {
    return attend(fused, x[0], x[1], x[2], mask, 0.0, g);
  }, {q, k, v}, 1e-12, 1e-10);
}

TEST_CASE("sdpa fused: gradcheck in f64 with a mask and dropout") {
  // The function must be deterministic: each call draws the same mask from Generator(3).
  Tensor q = test::random_f64({1, 2, 3, 4}, 1), k = test::random_f64({1, 2, 5, 4}, 2);
  Tensor v = test::random_f64({1, 2, 5, 3}, 3);
  Tensor mask = Tensor::from(std::vector<double>{0, 0, -1e9, 0, 0}, {1, 1, 1, 5});
  CHECK(gradcheck([&](const Tensors& in) {
    Generator gen(3);
    return sdpa(in[0], in[1], in[2], mask, 0.3, true, gen);
  }, {q, k, v}));
}

TEST_CASE("sdpa fused: padding masks with fully padded rows") {
  // BERT's case: q, k, v head-split views of one (B, T, 3·C) tensor, a (B, 1, 1, T) mask.
  // Batch 1 is all padding: every key of it is hidden.
  Tensor x = random_tensor({3, 67, 3 * 32}, 1, -2, 2, DType::f32);
  for (double hidden : {kLowest, -kInf}) {
    INFO("mask value " << hidden);
    Tensor mask = padding_mask({60, 0, 67}, 67, hidden, DType::f32);
    check_fused([&](const Tensors& in, bool fused, Generator& g) {
      Tensors qkv = split_qkv(in[0], 2);
      return attend(fused, qkv[0], qkv[1], qkv[2], mask, 0.0, g);
    }, {x}, 2e-6, 1e-4);
  }
  // finfo.min: the fully padded batch attends uniformly (as PyTorch): its rows are the mean
  // of its value rows. −inf: they are 0, with zero gradients — and no NaN anywhere.
  Tensor xl = x.clone().set_requires_grad(true);
  Tensors qkv = split_qkv(xl, 2);
  Tensor out = sdpa(qkv[0], qkv[1], qkv[2], padding_mask({60, 0, 67}, 67, -kInf, DType::f32), 0.0,
                    false);
  backward(sum(out));
  for (double g : xl.grad().to_vector<double>()) REQUIRE(std::isfinite(g));
  check_close(select(out, 0, 1), std::vector<double>(2 * 67 * 16, 0.0), 0, 0);
  Tensor grad_b1 = select(xl.grad(), 0, 1);  // batch 1's rows of dq, dk, dv
  check_close(grad_b1, std::vector<double>(67 * 96, 0.0), 0, 0);
}

TEST_CASE("sdpa fused: other mask shapes broadcast like the reference") {
  Tensor q = random_tensor({2, 2, 9, 8}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({2, 2, 11, 8}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({2, 2, 11, 8}, 3, -1, 1, DType::f32);
  const Shape shapes[] = {{2, 2, 9, 11}, {2, 1, 9, 11}, {11}, {2, 1, 9, 1}};
  for (const Shape& s : shapes) {
    INFO("mask shape " << s);
    Tensor mask = random_tensor(s, 4, -3, 0, DType::f32);
    check_fused([&](const Tensors& x, bool fused, Generator& g) {
      return attend(fused, x[0], x[1], x[2], mask, 0.0, g);
    }, {q, k, v}, 2e-6, 1e-4);
  }
  // a mask that requires grad gets its gradient (sdpa runs the reference then)
  Tensor m = random_tensor({2, 1, 1, 11}, 5, -1, 0, DType::f32);
  check_fused([&](const Tensors& x, bool fused, Generator& g) {
    return attend(fused, q, k, v, x[0], 0.0, g);
  }, {m}, 2e-6, 1e-4);
}

TEST_CASE("sdpa fused: dropout drops what the reference drops") {
  // Same generator state -> same kept probabilities, so values and gradients agree; over
  // several tiles, ragged, with a padding mask.
  Tensor x = random_tensor({2, 150, 3 * 32}, 1, -2, 2, DType::f32);
  Tensor mask = padding_mask({150, 97}, 150, kLowest, DType::f32);
  for (double p : {0.1, 0.5}) {
    INFO("p = " << p);
    check_fused([&](const Tensors& in, bool fused, Generator& g) {
      Tensors qkv = split_qkv(in[0], 2);
      return attend(fused, qkv[0], qkv[1], qkv[2], mask, p, g);
    }, {x}, 5e-6, 1e-4);
  }
  // both take the same counters from the generator: B·NH·Tq·Tk = 2·2·150·150 values
  Generator g1(5), g2(5);
  Tensors qkv = split_qkv(x, 2);
  sdpa(qkv[0], qkv[1], qkv[2], mask, 0.1, true, g1);
  sdpa_reference(qkv[0], qkv[1], qkv[2], mask, 0.1, true, g2);
  CHECK(g1.offset == g2.offset);
  CHECK(g1.offset == (2 * 2 * 150 * 150 + 3) / 4);
  // and dropout is really on: with p = 0.5 the output differs from evaluation's
  Generator g3(5);
  Tensor train = sdpa(qkv[0], qkv[1], qkv[2], mask, 0.5, true, g3);
  Tensor eval = sdpa(qkv[0], qkv[1], qkv[2], mask, 0.5, false, g3);
  std::vector<double> a = train.to_vector<double>(), b = eval.to_vector<double>();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
  CHECK(diff > 0.1);
}

TEST_CASE("sdpa fused: output and gradients in (B T NH HS) layout") {
  // The merge of heads, transpose(out, 1, 2), is packed: BERT's reshape to (B, T, C) is a view.
  Tensor x = random_tensor({2, 5, 3 * 8}, 1, -1, 1, DType::f32).set_requires_grad(true);
  Tensors qkv = split_qkv(x, 2);
  Tensor out = sdpa(qkv[0], qkv[1], qkv[2], Tensor(), 0.0, false);
  CHECK(out.shape() == Shape{2, 2, 5, 4});
  CHECK(transpose(out, 1, 2).is_contiguous());
  // with packed (B, NH, T, HS) inputs the output layout is the same
  Tensor packed = sdpa(contiguous(qkv[0]), contiguous(qkv[1]), contiguous(qkv[2]), Tensor(),
                       0.0, false);
  CHECK(transpose(packed, 1, 2).is_contiguous());
  check_close(packed, out, 0, 0);
}

TEST_CASE("sdpa fused: the same numbers on 1 thread and on all") {
  // each output row and each (b, h) of the gradients is computed by one task in a fixed order
  Tensor q = random_tensor({2, 3, 100, 16}, 1, -2, 2, DType::f32);
  Tensor k = random_tensor({2, 3, 140, 16}, 2, -2, 2, DType::f32);
  Tensor v = random_tensor({2, 3, 140, 16}, 3, -1, 1, DType::f32);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor qq = q.clone().set_requires_grad(true);
    Generator gen(1);
    Tensor out = sdpa(qq, k, v, Tensor(), 0.2, true, gen);
    backward(sum(out * out));
    set_num_threads(0);
    return Tensors{out, qq.grad()};
  };
  Tensors one = run(1), all = run(0);
  check_close(all[0], one[0], 0, 0);
  check_close(all[1], one[1], 0, 0);
}

}  // namespace test_sdpa_fused
