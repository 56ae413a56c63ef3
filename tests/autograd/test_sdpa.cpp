// tests/autograd/test_sdpa.cpp — scaled dot-product attention: hand-checked values, masks,
// head-split (strided) views, gradcheck, dropout, errors, CPU == CUDA.
#include <cmath>
#include <limits>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;

namespace {
Tensor f64(const Shape& s, uint64_t seed) {
  Generator g(seed);
  Tensor t = Tensor::empty(s, DType::f64);
  uniform_(t, -1, 1, g);
  return t.set_requires_grad(true);
}
// (B, T, 3·C) -> q, k, v as (B, NH, T, HS) views: (B, T, 3, NH, HS), select one of the three,
// move the heads forward. No copy: each is a strided view of x (row stride 3·C).
Tensors split_qkv(const Tensor& x, int64_t NH) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2) / 3;
  Tensor x5 = view(x, {B, T, 3, NH, C / NH});
  return {transpose(select(x5, 2, 0), 1, 2), transpose(select(x5, 2, 1), 1, 2),
          transpose(select(x5, 2, 2), 1, 2)};
}
}  // namespace

TEST_CASE("sdpa: hand-checked values with and without a mask") {
  // HS = 4, so the scale is 1/√4 = 1/2. Query 0 = (2,0,0,0): scores (2·1/2, 0) = (1, 0),
  // softmax (e/(e+1), 1/(e+1)) = (0.7310586, 0.2689414); query 1 = 0: uniform (½, ½).
  Tensor q = Tensor::from({2, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 2, 4});
  Tensor k = Tensor::from({1, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 2, 4});
  Tensor v = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
  const double p1 = 1.0 / (std::exp(1.0) + 1.0);  // weight of value row 1 for query 0
  // out = (1−p1)·(1,2,3,4) + p1·(5,6,7,8) = (1,2,3,4) + 4·p1;  uniform: (3,4,5,6)
  check_close(sdpa(q, k, v, Tensor(), 0.0, false),
              {1 + 4 * p1, 2 + 4 * p1, 3 + 4 * p1, 4 + 4 * p1, 3, 4, 5, 6}, 1e-6);
  // HF's padding mask hides key 1 from both queries: each output is value row 0
  Tensor mask = Tensor::from({0, std::numeric_limits<float>::lowest()}, {1, 1, 1, 2});
  check_close(sdpa(q, k, v, mask, 0.0, false), {1, 2, 3, 4, 1, 2, 3, 4}, 1e-6);
  // queries and keys may differ in number (Tq = 1, Tk = 2)
  check_close(sdpa(slice(q, 2, 0, 1), k, v, Tensor(), 0.0, false),
              {1 + 4 * p1, 2 + 4 * p1, 3 + 4 * p1, 4 + 4 * p1}, 1e-6);
}

TEST_CASE("sdpa: head-split strided views give the same result as packed copies") {
  Tensor x = rand({2, 5, 3 * 8});
  Tensors qkv = split_qkv(x, 2);  // (2, 2, 5, 4) views with row stride 24
  CHECK(!qkv[0].is_contiguous());
  Tensor mask = Tensor::zeros({2, 1, 1, 5});
  fill_(slice(mask, 3, 3, 5).detach(), -1e30);  // hide keys 3 and 4 from every query
  Tensor a = sdpa(qkv[0], qkv[1], qkv[2], mask, 0.0, false);
  Tensor b = sdpa(qkv[0].contiguous(), qkv[1].contiguous(), qkv[2].contiguous(), mask, 0.0, false);
  check_close(a, b, 1e-6);
  CHECK(a.shape() == Shape{2, 2, 5, 4});
}

TEST_CASE("sdpa: gradcheck through head-split views and a padding mask") {
  Tensor x = f64({2, 3, 3 * 4}, 1);
  Tensor mask = Tensor::from(std::vector<double>{0, 0, 0, 0, 0, -1e9}, {2, 1, 1, 3});
  CHECK(gradcheck([&](const Tensors& in) {
    Tensors qkv = split_qkv(in[0], 2);
    return sdpa(qkv[0], qkv[1], qkv[2], mask, 0.0, false);
  }, {x}));
  // separate q, k, v leaves, a per-query mask (B, 1, Tq, Tk) and Tq != Tk
  Tensor q = f64({1, 2, 2, 3}, 2), k = f64({1, 2, 4, 3}, 3), v = f64({1, 2, 4, 5}, 4);
  Tensor m2 = Tensor::from(std::vector<double>{0, -1e9, 0, 0, 0, 0, -1e9, 0}, {1, 1, 2, 4});
  CHECK(gradcheck([&](const Tensors& in) { return sdpa(in[0], in[1], in[2], m2, 0.0, false); },
                  {q, k, v}));
}

TEST_CASE("sdpa: dropout on the probabilities in training mode only") {
  Tensor q = rand({1, 2, 6, 4}), k = rand({1, 2, 6, 4}), v = rand({1, 2, 6, 4});
  Tensor eval = sdpa(q, k, v, Tensor(), 0.5, false);
  check_close(eval, sdpa(q, k, v, Tensor(), 0.0, true), 0, 0);  // p = 0 in training: no dropout
  Generator g1(9), g2(9);
  Tensor t1 = sdpa(q, k, v, Tensor(), 0.5, true, g1);
  Tensor t2 = sdpa_reference(q, k, v, Tensor(), 0.5, true, g2);
  check_close(t1, t2, 1e-6, 1e-6);  // same generator state: the same mask (fused vs composed)
  std::vector<double> a = t1.to_vector<double>(), b = eval.to_vector<double>();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
  CHECK(diff > 1e-3);
  // v = 1: each output is Σ_k dropout(P)_k = Σ_k kept P_k / (1 − p), which is 0 when every
  // probability of the row is dropped and 2·(the kept mass) otherwise: always in [0, 2]
  Tensor ones = Tensor::ones({1, 2, 6, 4});
  Generator g3(4);
  for (double o : sdpa(q, k, ones, Tensor(), 0.5, true, g3).to_vector<double>()) {
    CHECK(o >= 0.0);
    CHECK(o <= 2.0 + 1e-6);
  }
}

TEST_CASE("sdpa: errors name the shapes") {
  Tensor q = Tensor::zeros({1, 2, 3, 4});
  CHECK(test::error_message([&] { sdpa(Tensor::zeros({2, 3, 4}), q, q, Tensor(), 0.0, false); }) ==
        "[sdpa] expected q, k, v of shape (B, NH, T, HS), got q (2, 3, 4), k (1, 2, 3, 4), v (1, 2, 3, 4)");
  CHECK_THROWS_AS(sdpa(q, Tensor::zeros({1, 2, 3, 5}), q, Tensor(), 0.0, false), ShapeError);
  CHECK_THROWS_AS(sdpa(q, q, Tensor::zeros({1, 2, 4, 4}), Tensor(), 0.0, false), ShapeError);
  CHECK(test::error_message([&] { sdpa(q, q, q, Tensor::zeros({1, 1, 1, 5}), 0.0, false); }) ==
        "[sdpa] expected a mask broadcastable to the scores (1, 2, 3, 3), got (1, 1, 1, 5) "
        "(a padding mask is (B, 1, 1, Tk))");
  CHECK_THROWS_AS(sdpa(q, q, q, Tensor(), 1.0, true), ConfigError);
  CHECK_THROWS_AS(sdpa(q, q.to(DType::f64), q, Tensor(), 0.0, false), DTypeError);
}

TEST_CASE("sdpa: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({2, 7, 3 * 16});
  Tensor mask = Tensor::zeros({2, 1, 1, 7});
  fill_(slice(mask, 3, 5, 7).detach(), std::numeric_limits<float>::lowest());
  Tensors c = split_qkv(x, 4), g = split_qkv(x.detach().to(Device::cuda()), 4);
  Tensor out_c = sdpa(c[0], c[1], c[2], mask, 0.0, false);
  Tensor out_g = sdpa(g[0], g[1], g[2], mask.detach().to(Device::cuda()), 0.0, false);
  check_close(out_g.detach().to(Device::cpu()), out_c, 1e-5, 1e-5);
}
