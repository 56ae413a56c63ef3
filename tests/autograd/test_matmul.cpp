// tests/autograd/test_matmul.cpp — matmul: 2-d, batched, broadcast batch dims, a shared 2-d b,
// transposed / head-split / sliced views as operands (BLAS flags instead of copies), gradcheck
// on each, errors. The oracle is a naive triple loop in double over the logical indices.
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_f64;

namespace {


// Flat index of batch element `i` of `out_batch` in an operand with batch dims `batch`
// (right-aligned, size-1 dims broadcast): NumPy's rule, written out.
int64_t batch_index(int64_t i, const Shape& out_batch, const Shape& batch) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(out_batch.size()) - 1,
               e = static_cast<int64_t>(batch.size()) - 1;
       d >= 0; --d, --e) {
    int64_t k = i % out_batch[d];
    i /= out_batch[d];
    if (e >= 0) {
      if (batch[e] != 1) idx += k * stride;
      stride *= batch[e];
    }
  }
  return idx;
}

// c[..., m, n] = Σ_k a[..., m, k] · b[..., k, n], summed in double by plain loops.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();  // logical row-major order
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape ob = broadcast_shapes(ab, bb, "test");
  std::vector<double> c(numel(ob) * M * N, 0.0);
  for (int64_t i = 0; i < numel(ob); ++i) {
    const double* pa = av.data() + batch_index(i, ob, ab) * M * K;
    const double* pb = bv.data() + batch_index(i, ob, bb) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) c[(i * M + m) * N + n] += pa[m * K + k] * pb[k * N + n];
  }
  return c;
}

}  // namespace

TEST_CASE("matmul: hand-checked 2-d and batched products") {
  Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}),
         b = Tensor::from({7, 8, 9, 10, 11, 12}, {3, 2});
  // [1 2 3]·[7 9 11]ᵀ = 7 + 18 + 33 = 58, [1 2 3]·[8 10 12]ᵀ = 8 + 20 + 36 = 64,
  // [4 5 6]·[7 9 11]ᵀ = 28 + 45 + 66 = 139, [4 5 6]·[8 10 12]ᵀ = 32 + 50 + 72 = 154
  check_close(matmul(a, b), {58, 64, 139, 154});
  // batch 0: A·I = A, batch 1: I·B = B
  Tensor ba = Tensor::from({1, 2, 3, 4, 1, 0, 0, 1}, {2, 2, 2});
  Tensor bb = Tensor::from({1, 0, 0, 1, 5, 6, 7, 8}, {2, 2, 2});
  check_close(matmul(ba, bb), {1, 2, 3, 4, 5, 6, 7, 8});
  // a transposed view of b's storage: bᵀ (2, 3) read with the transpose flag
  Tensor bt = transpose(Tensor::from({7, 9, 11, 8, 10, 12}, {2, 3}), 0, 1);
  check_close(matmul(a, bt), {58, 64, 139, 154});
  // K = 0: an empty sum is 0
  check_close(matmul(Tensor::zeros({2, 0}), Tensor::zeros({0, 3})), {0, 0, 0, 0, 0, 0});
  // an outer product (K = 1)
  check_close(matmul(Tensor::from({1, 2}, {2, 1}), Tensor::from({3, 4, 5}, {1, 3})),
              {3, 4, 5, 6, 8, 10});
}

TEST_CASE("matmul: batched and broadcast shapes agree with the naive loop") {
  const std::vector<std::pair<Shape, Shape>> cases{
      {{3, 4, 5}, {3, 5, 2}},        // batched 3-d
      {{2, 3, 4, 5}, {2, 3, 5, 6}},  // batched 4-d
      {{2, 3, 4}, {4, 5}},           // a shared 2-d b (the Linear fold into one GEMM)
      {{2, 1, 3, 4}, {5, 4, 2}},     // batch dims broadcast: (2, 1) with (5) -> (2, 5)
      {{3, 4}, {2, 4, 5}},           // a 2-d a shared by every batch of b
  };
  for (const auto& [sa, sb] : cases) {
    Tensor a = random_f64(sa, 1), b = random_f64(sb, 2);
    INFO("a " << sa << " b " << sb);
    check_close(matmul(a, b), naive_matmul(a, b), 1e-12);
  }
  // a (T, B, C) permuted view times a shared b: the batch does not fold, one GEMM per batch
  Tensor x = random_f64({3, 2, 4}, 3), w = random_f64({4, 5}, 4);
  Tensor xp = transpose(x, 0, 1);
  check_close(matmul(xp, w), naive_matmul(xp, w), 1e-12);
  // an expanded a (2, 1, 3, 4) whose batch strides are 0: both batches are x itself, so the
  // rows must not be folded into one (6 × 4) GEMM (that read past x's 3 rows: fixed)
  Tensor x34 = random_f64({3, 4}, 9);
  Tensor xe = expand(x34, {2, 1, 3, 4});
  check_close(matmul(xe, w), naive_matmul(xe, w), 1e-12);
  // a strided slice (every other column) is packed before the GEMM
  Tensor wide = random_f64({3, 8}, 5);
  Tensor cols = slice(wide, 1, 0, 8, 2);  // (3, 4), column stride 2
  check_close(matmul(cols, w), naive_matmul(cols, w), 1e-12);
}

TEST_CASE("matmul: attention scores on head-split views of (B T NH*HS)") {
  // q and k are (B, T, C) = (2, 3, 4) with NH = 2 heads of HS = 2; the heads are views
  // (B, NH, T, HS) and kᵀ a view (B, NH, HS, T):
  //   att[b, h, i, j] = Σ_d q[b, i, h·HS + d] · k[b, j, h·HS + d]
  const int64_t B = 2, T = 3, NH = 2, HS = 2, C = NH * HS;
  Tensor q = random_f64({B, T, C}, 6), k = random_f64({B, T, C}, 7), v = random_f64({B, T, C}, 8);
  auto heads = [&](const Tensor& x) { return permute(reshape(x, {B, T, NH, HS}), {0, 2, 1, 3}); };
  Tensor att = matmul(heads(q), transpose(heads(k), -2, -1));
  CHECK(att.shape() == Shape{B, NH, T, T});
  auto qv = q.to_vector<double>(), kv = k.to_vector<double>();
  std::vector<double> expected;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < HS; ++d)
            s += qv[(b * T + i) * C + h * HS + d] * kv[(b * T + j) * C + h * HS + d];
          expected.push_back(s);
        }
  check_close(att, expected, 1e-12);
  // gradients through the views, and the att·v product on a head-split v
  CHECK(gradcheck(
      [&](const Tensors& x) { return matmul(heads(x[0]), transpose(heads(x[1]), -2, -1)); },
      {q, k}));
  CHECK(gradcheck([&](const Tensors& x) {
    return matmul(matmul(heads(x[0]), transpose(heads(x[1]), -2, -1)), heads(x[2]));
  }, {q, k, v}));
}

TEST_CASE("matmul: gradcheck in f64") {
  const std::vector<std::pair<Shape, Shape>> cases{
      {{3, 4}, {4, 2}}, {{3, 4, 5}, {3, 5, 2}}, {{2, 3, 4, 5}, {2, 3, 5, 2}},
      {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{3, 4}, {2, 4, 5}}};
  for (const auto& [sa, sb] : cases) {
    INFO("a " << sa << " b " << sb);
    CHECK(gradcheck([](const Tensors& x) { return matmul(x[0], x[1]); }, {random_f64(sa, 1), random_f64(sb, 2)}));
  }
  // transposed views as inputs: aᵀ·bᵀ with a (4, 3), b (2, 4)
  CHECK(gradcheck(
      [](const Tensors& x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); },
      {random_f64({4, 3}, 3), random_f64({2, 4}, 4)}));
  // a permuted 3-d a with a shared b, and a strided slice
  CHECK(gradcheck([](const Tensors& x) { return matmul(transpose(x[0], 0, 1), x[1]); },
                  {random_f64({3, 2, 4}, 5), random_f64({4, 5}, 6)}));
  CHECK(gradcheck([](const Tensors& x) { return matmul(slice(x[0], 1, 0, 8, 2), x[1]); },
                  {random_f64({3, 8}, 7), random_f64({4, 2}, 8)}));
  CHECK(gradcheck([](const Tensors& x) { return matmul(expand(x[0], {2, 1, 3, 4}), x[1]); },
                  {random_f64({3, 4}, 11), random_f64({4, 2}, 12)}));
  // only one operand requires grad
  Tensor fixed = random_f64({4, 2}, 9).set_requires_grad(false);
  CHECK(gradcheck([fixed](const Tensors& x) { return matmul(x[0], fixed); }, {random_f64({2, 3, 4}, 10)}));
}

TEST_CASE("matmul: empty inner dim K = 0") {
  // C = Σ over no k = 0, dA is (.., M, 0) and dB (0, N): empty, but backward must run (it threw
  // "[reshape] cannot reshape (2, 3, 0) (0 elements) to (-1, 0)": fixed)
  Tensor a = Tensor::zeros({2, 3, 0}).set_requires_grad(true),
         b = Tensor::zeros({0, 4}).set_requires_grad(true);
  Tensor c = matmul(a, b);
  check_close(c, std::vector<double>(24, 0.0));
  backward(sum(c));
  CHECK(a.grad().shape() == Shape{2, 3, 0});
  CHECK(b.grad().shape() == Shape{0, 4});
}

TEST_CASE("matmul: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor q = rand({2, 5, 8}), k = rand({2, 5, 8}), w = rand({8, 3});
  auto heads = [](const Tensor& x) { return permute(reshape(x, {2, 5, 2, 4}), {0, 2, 1, 3}); };
  auto cu = [](const Tensor& t) { return t.detach().to(Device::cuda()); };
  check_close(matmul(heads(cu(q)), transpose(heads(cu(k)), -2, -1)).detach().to(Device::cpu()),
              matmul(heads(q), transpose(heads(k), -2, -1)), 1e-5);
  check_close(matmul(cu(q), cu(w)).detach().to(Device::cpu()), matmul(q, w), 1e-5);
  Tensor a = rand({2, 1, 3, 4}).set_requires_grad(true),
         b = rand({5, 4, 2}).set_requires_grad(true);
  Tensor ag = cu(a.detach()).set_requires_grad(true), bg = cu(b.detach()).set_requires_grad(true);
  backward(sum(matmul(a, b)));
  backward(sum(matmul(ag, bg)));
  check_close(ag.grad().detach().to(Device::cpu()), a.grad(), 1e-5);
  check_close(bg.grad().detach().to(Device::cpu()), b.grad(), 1e-5);
}

TEST_CASE("matmul: errors") {
  CHECK(test::error_message([] { matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 2})); }) ==
        "[matmul] inner dims differ: a is (2, 3), b is (4, 2)");
  CHECK_THROWS_AS(matmul(Tensor::zeros({3}), Tensor::zeros({3, 2})), ShapeError);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 2})),
                  ShapeError);  // batch 2 vs 3
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 2}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 3}, DType::i32), Tensor::zeros({3, 2}, DType::i32)),
                  DTypeError);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 3}), test::fake_cuda({3, 2})), DeviceError);
}
