// tests/autograd/test_gelu.cpp — exact GELU: hand-checked values, PyTorch values, gradcheck,
// CPU == CUDA, errors.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

TEST_CASE("gelu: hand-checked values and gradients") {
  // Φ(1) = 0.8413447461 and φ(1) = e^{-1/2}/√(2π) = 0.2419707245 (normal tables), Φ(−1) = 1 − Φ(1):
  //   gelu(0) = 0·½ = 0          gelu'(0) = Φ(0) + 0 = 0.5
  //   gelu(1) = Φ(1)             gelu'(1) = Φ(1) + φ(1) = 1.0833154706
  //   gelu(−1) = −Φ(−1)          gelu'(−1) = Φ(−1) − φ(1) = −0.0833154706
  //   gelu(2) = 2·Φ(2) = 2·0.9772498681   gelu'(2) = Φ(2) + 2·φ(2) = 0.9772498681 + 2·0.0539909665
  Tensor x = Tensor::from({0, 1, -1, 2}, {4}).set_requires_grad(true);
  Tensor y = gelu(x);
  check_close(y, {0, 0.8413447461, -0.1586552539, 1.9544997361});
  backward(y, Tensor::from({1, 1, 1, 2}, {4}));
  check_close(x.grad(), {0.5, 1.0833154706, -0.0833154706, 2 * 1.0852318011});

  // gelu(x) − gelu(−x) = x·Φ(x) + x·Φ(−x) = x, for any x
  Tensor r = random_tensor({50}, 7, -6, 6, DType::f32);
  check_close(gelu(r) - gelu(-r), r, 1e-5);

  // the far negative tail: −10·Φ(−10) = −7.619853024e-23, kept by erfc (1 + erf would give 0)
  check_close(gelu(Tensor::from({-10.0f}, {1})), {-7.619853024e-23}, 0, 1e-5);
}

TEST_CASE("gelu: matches PyTorch on a random case") {
  // Produced once with PyTorch 2 (values printed with %.10g):
  // python3 -c "import torch; torch.manual_seed(0); x=(torch.randn(2,5,dtype=torch.float64)*3).round(decimals=3).requires_grad_(); dy=torch.randn(2,5,dtype=torch.float64).round(decimals=3); y=torch.nn.functional.gelu(x); y.backward(dy); print(x, dy, y, x.grad)"
  const std::vector<double> xv = {4.623, -0.88, -6.536, 1.705, -3.254,
                                  -4.196, 1.21, 2.514, -2.158, -1.21};
  const std::vector<double> dyv = {-0.597, 0.182, -0.857, 1.101, -1.071,
                                   0.123, -0.566, 0.373, -0.892, -1.509};
  const std::vector<double> y_ref = {4.622991257, -0.1666980962, -2.064915243e-10, 1.629814253,
                                     -0.001851400392, -5.69964175e-05, 1.07310127, 2.498995136,
                                     -0.03337113051, -0.1368987302};
  const std::vector<double> dx_ref = {-0.5970240425, -0.008905376554, 1.155491607e-09,
                                      1.227501869, 0.006370555995, -2.926535908e-05,
                                      -0.6333604189, 0.3866435266, 0.06103682997, 0.1795881132};
  for (DType dt : {DType::f64, DType::f32}) {
    INFO("dtype " << dt);
    const double tol = dt == DType::f64 ? 1e-9 : 2e-6;  // literals have 10 significant digits
    Tensor x = Tensor::from(xv, {2, 5}).to(dt).set_requires_grad(true);
    Tensor y = gelu(x);
    check_close(y, y_ref, tol, tol);
    backward(y, Tensor::from(dyv, {2, 5}).to(dt));
    check_close(x.grad(), dx_ref, tol, tol);
  }
}

TEST_CASE("gelu: gradcheck in f64") {
  for (const Shape& s : {Shape{3, 4}, Shape{5, 1}, Shape{7}, Shape{2, 3, 5}}) {
    INFO("shape " << s);
    Tensor x = random_tensor(s, 1, -4, 4).set_requires_grad(true);
    CHECK(gradcheck([](const Tensors& in) { return gelu(in[0]); }, {x}));
  }
  Tensor x = random_tensor({3, 2}, 2, -4, 4).set_requires_grad(true);  // a transposed view
  CHECK(gradcheck([](const Tensors& in) { return gelu(transpose(in[0], 0, 1)); }, {x}));
}

TEST_CASE("gelu: CPU == CUDA") {
  if (!test::have_gpu()) return;
  for (const Shape& s : {Shape{1000, 37}, Shape{5, 1}}) {
    Tensor x = random_tensor(s, 3, -8, 8, DType::f32).set_requires_grad(true);
    test::check_cpu_cuda([](const Tensors& in) { return gelu(in[0]); }, {x});
  }
}

TEST_CASE("gelu: errors") {
  CHECK(test::error_message([] { gelu(Tensor::zeros({2}, DType::i32)); }) ==
        "[gelu] expected input to be f32 or f64, got i32");
  CHECK_THROWS_AS(gelu(Tensor::zeros({2}, DType::u8)), DTypeError);
  CHECK_THROWS_AS(gelu(Tensor()), Error);
}

TEST_CASE("bias_gelu_in_row_chunks: the unchunked computation's bits, chunk edges and errors") {
  // p1, p2: row products written as loops (row by row, so chunked and whole agree exactly):
  // p1 (rows, C) -> (rows, I) = x·W1ᵀ, p2 (rows, I) -> (rows, O) = ·W2ᵀ. The oracle runs p1 on
  // every row, then bias_gelu (the fused op), then p2: what the chunks must reproduce.
  for (const auto& [M, C, I] : {std::tuple<int64_t, int64_t, int64_t>{600, 8, 64},  // 256-row chunks
                               {37, 3, 4096},                                      // 16-row chunks
                               {1, 5, 7}}) {
    INFO("M=", M, " C=", C, " I=", I);
    const int64_t O = 6;
    const DType f32 = DType::f32;
    const Tensor xs = random_tensor({M, C}, 2, -1, 1, f32), w1 = random_tensor({I, C}, 3, -1, 1, f32),
                 w2 = random_tensor({O, I}, 4, -1, 1, f32), b = random_tensor({I}, 5, -1, 1, f32);
    // rows (rows, in) -> (rows, out) = x·Wᵀ with W (out, in), one row and one output at a time
    auto times = [](const Tensor& W, int64_t in, int64_t out) {
      return [W = W.data<float>(), in, out](const float* x, int64_t rows, float* y) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < out; ++j) {
            float s = 0;
            for (int64_t k = 0; k < in; ++k) s += x[r * in + k] * W[j * in + k];
            y[r * out + j] = s;
          }
      };
    };
    const auto p1 = times(w1, C, I), p2 = times(w2, I, O);
    NoGradGuard no_grad;
    const Tensor y = bias_gelu_in_row_chunks(xs, p1, b, p2, O);
    CHECK(y.shape() == Shape{M, O});
    Tensor h = Tensor::empty({M, I}), want = Tensor::empty({M, O});
    p1(xs.data<float>(), M, h.data<float>());
    const Tensor g = bias_gelu(h, b);
    p2(g.data<float>(), M, want.data<float>());
    CHECK(y.to_vector<float>() == want.to_vector<float>());
  }
  // (..., C) in, (..., out) back; zero rows; errors
  auto id = [](const float* in, int64_t rows, float* out) { std::copy(in, in + rows * 2, out); };
  const Tensor b2 = Tensor::zeros({2});
  CHECK_THROWS_AS(bias_gelu_in_row_chunks(Tensor::zeros({3, 2}).set_requires_grad(true), id, b2, id, 2),
                  AutogradError);  // grad mode, and x needs a gradient
  CHECK_THROWS_AS(bias_gelu_in_row_chunks(Tensor::zeros({3, 2}), id, Tensor::zeros({2}).set_requires_grad(true),
                                          id, 2),
                  AutogradError);  // grad mode, and the bias (a parameter) needs one
  NoGradGuard no_grad;
  CHECK(bias_gelu_in_row_chunks(Tensor::zeros({3, 4, 2}), id, b2, id, 2).shape() == Shape{3, 4, 2});
  CHECK(bias_gelu_in_row_chunks(Tensor::zeros({0, 2}), id, b2, id, 2).numel() == 0);
  CHECK_THROWS_AS(bias_gelu_in_row_chunks(Tensor::zeros({3, 2}), id, Tensor(), id, 2), Error);
  CHECK_THROWS_AS(bias_gelu_in_row_chunks(Tensor::zeros({3, 2}, DType::f64), id, b2, id, 2), DTypeError);
}
